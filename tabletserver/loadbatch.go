package tabletserver

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// DefaultLoadParallelism is Options.LoadParallelism's default: opening a
// fresh tablet is mostly a synced manifest and etcd round trips, so a
// few more at once than cores keep a server busy.
const DefaultLoadParallelism = 16

// LoadTablets is LoadTablet for a batch of tablets (docs/OWNERSHIP.md
// "Loads in batches"): their assignments are read from etcd in one
// request per meta.MaxReadAssignments tablets, the tablets opened up to
// Options.LoadParallelism at once, and each tablet's answer streamed as
// soon as it has one, so that a slow or failing tablet delays or fails
// no other. Every tablet goes through the checks of LoadTablet against
// its own record (loadAssigned): a fenced tablet is refused alone.
func (s *Server) LoadTablets(req *tabulapb.LoadTabletsRequest, stream grpc.ServerStreamingServer[tabulapb.LoadTabletsResponse]) error {
	ctx := stream.Context()
	loads := req.GetLoads()
	var mu sync.Mutex
	var sendErr error
	s.loadBatch(ctx, loads, func(i int, err error) {
		resp := &tabulapb.LoadTabletsResponse{Index: uint32(i)}
		if err != nil {
			info := loads[i].GetTablet()
			st := status.Convert(toStatus(ctx, err, info.GetTable(), info.GetTabletId(), nil))
			resp.Code, resp.Message = uint32(st.Code()), st.Message()
		}
		mu.Lock()
		defer mu.Unlock()
		if sendErr == nil {
			sendErr = stream.Send(resp)
		}
	})
	return sendErr
}

// batchLoad is one tablet of a batch past checkLoad.
type batchLoad struct {
	i      int
	key    string
	info   *tabulapb.TabletInfo
	schema *tabulapb.TableSchema
	dir    string
	unlock func()
}

// loadBatch loads every tablet of loads and calls answer once for each
// (by its index), from any goroutine, as soon as its load ended; it
// returns when all have been answered.
func (s *Server) loadBatch(ctx context.Context, loads []*tabulapb.LoadTabletRequest, answer func(int, error)) {
	var wg sync.WaitGroup
	var ready []*batchLoad
	seen := make(map[string]bool, len(loads))
	for i, l := range loads {
		info := l.GetTablet()
		if info == nil {
			answer(i, cell.Invalidf("tablet is missing"))
			continue
		}
		key := tabletKey(info.GetTable(), info.GetTabletId())
		s.loads.started(key)
		dir, err := s.checkLoad(info, l.GetSchema())
		if err == nil && seen[key] {
			err = cell.Invalidf("tablet %s is named twice in one batch", key)
		}
		if err != nil {
			s.loads.done(key, err)
			answer(i, err)
			continue
		}
		seen[key] = true
		b := &batchLoad{i: i, key: key, info: info, schema: l.GetSchema(), dir: dir}
		unlock, ok := s.keys.tryLock(key)
		if !ok {
			// Another load, unload, split or merge of this tablet runs:
			// this one waits for it on its own, as LoadTablet does, and
			// reads its record after it; the batch does not wait.
			wg.Go(func() {
				err := s.load(ctx, info, b.schema)
				s.loads.done(key, err)
				answer(i, err)
			})
			continue
		}
		b.unlock = unlock
		ready = append(ready, b)
	}
	// The generation is read after the keys are locked and before etcd
	// is, as by a single load: install refuses what a re-registration
	// since has made another registration's.
	gen := s.generation()
	for len(ready) > 0 {
		n := min(len(ready), meta.MaxReadAssignments)
		chunk := ready[:n]
		ready = ready[n:]
		recs, err := s.readAssignments(ctx, chunk)
		for j, b := range chunk {
			if err != nil {
				s.endBatchLoad(b, err, answer)
				continue
			}
			wg.Go(func() {
				select {
				case s.loadSem <- struct{}{}:
				case <-ctx.Done():
					s.endBatchLoad(b, ctx.Err(), answer)
					return
				}
				defer func() { <-s.loadSem }()
				if h := s.opts.testHookBatchLoad; h != nil {
					h()
				}
				err := recs[j].err
				if err == nil {
					err = s.loadAssigned(ctx, b.info, b.schema, b.dir, gen, recs[j].rec, recs[j].schema)
				}
				s.endBatchLoad(b, err, answer)
			})
		}
	}
	wg.Wait()
}

func (s *Server) endBatchLoad(b *batchLoad, err error, answer func(int, error)) {
	b.unlock()
	s.loads.done(b.key, err)
	answer(b.i, err)
}

// assignmentRead is one tablet's part of readAssignments.
type assignmentRead struct {
	rec    meta.VersionedTablet
	schema *tabulapb.TableSchema
	err    error // this tablet's alone: its table is gone, a record that does not decode
}

// readAssignments is readAssignment for the tablets of chunk, in one etcd
// request: each tablet's record and its table's schema at one revision,
// the schemas from the cache while their table records have not changed.
// An error of the request fails every tablet of chunk; a tablet's own
// (its table is gone, its record does not decode) is in its answer.
func (s *Server) readAssignments(ctx context.Context, chunk []*batchLoad) ([]assignmentRead, error) {
	names := make([]meta.TabletName, len(chunk))
	known := map[string]int64{}
	cached := map[string]*tabulapb.TableSchema{}
	for i, b := range chunk {
		table := b.info.GetTable()
		names[i] = meta.TabletName{Table: table, ID: b.info.GetTabletId()}
		if _, ok := known[table]; !ok {
			cached[table], known[table] = s.schemaCache.get(table)
		}
	}
	r, err := meta.GetTabletsAndTables(ctx, s.etcd, s.layout, names, known)
	if err != nil {
		return nil, err
	}
	schemas := make(map[string]*tabulapb.TableSchema, len(r.Tables))
	tableErr := map[string]error{}
	for table, t := range r.Tables {
		switch {
		case t.Err != nil:
			tableErr[table] = t.Err
		case t.Rev == 0:
			// As meta.GetTabletAndTable answers it: NOT_FOUND.
			tableErr[table] = fmt.Errorf("%w: table %s", meta.ErrNotFound, table)
		case t.Changed:
			s.schemaCache.put(table, t.Table.Schema, t.Rev)
			schemas[table] = t.Table.Schema
		default:
			schemas[table] = cached[table]
		}
	}
	out := make([]assignmentRead, len(chunk))
	for i, n := range names {
		out[i] = assignmentRead{rec: r.Tablets[i], schema: schemas[n.Table], err: r.Errs[i]}
		if e := tableErr[n.Table]; e != nil {
			out[i].err = e
		}
	}
	return out, nil
}
