package master

import (
	"bytes"
	"context"
	"log/slog"
	"path"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

const (
	// indexPageSize is how many keys one page of the index's initial read
	// holds.
	indexPageSize = 1000
	// indexRetryDelay is the pause after a failed build of the index.
	indexRetryDelay = 500 * time.Millisecond
	// syncTimeout bounds how long a read waits for the index to catch up
	// with etcd before it reads etcd instead.
	syncTimeout = 2 * time.Second
	// progressEvery is how often a waiting read asks etcd for a progress
	// notification (the index's revision moves only with its events or
	// with such notifications).
	progressEvery = 100 * time.Millisecond
)

// tabletIndex is every master's in-memory copy of tables/ and tablets/:
// per table the schema and the tablets sorted by start key. It is built
// with paginated range reads at one revision and then kept current by a
// watch from the next revision; a failed or cancelled watch (e.g. after
// etcd compacted the revision it needed) makes it rebuild. Until the first
// build completes it is not ready and callers read etcd. Its records are
// never modified after insertion, so readers may keep pointers to them.
type tabletIndex struct {
	cli      meta.Store
	layout   meta.Layout
	log      *slog.Logger
	pageSize int
	// w is the index's own watcher, so that progress requests reach only
	// its stream.
	w *meta.MapWatcher

	// mu protects the fields below.
	mu sync.RWMutex
	// rev is the etcd revision the index reflects; 0 before the first build.
	rev     int64
	schemas map[string]*tabulapb.TableSchema
	tablets map[string]*tableTablets
	// advanced is closed (and replaced) whenever rev moves.
	advanced chan struct{}
	// builds counts completed builds.
	builds int
	// splits counts the splits the watch saw committed (metrics).
	splits atomic.Uint64
	// stopWatch cancels the current watch (tests use it).
	stopWatch context.CancelFunc
	// feeds are told of every change (the leader's assignment loop).
	feeds []*changeFeed
}

// tableTablets are one table's tablets.
type tableTablets struct {
	byID map[string]*meta.VersionedTablet
	// sorted is ordered by start key, then id.
	sorted []*meta.VersionedTablet
}

func newTabletIndex(cli meta.Store, l meta.Layout, log *slog.Logger, pageSize int) *tabletIndex {
	if pageSize <= 0 {
		pageSize = indexPageSize
	}
	return &tabletIndex{
		cli: cli, layout: l, log: log, pageSize: pageSize,
		w:        meta.NewMapWatcher(cli, l),
		schemas:  map[string]*tabulapb.TableSchema{},
		tablets:  map[string]*tableTablets{},
		advanced: make(chan struct{}),
	}
}

// run builds the index and follows the watch until ctx ends, rebuilding
// whenever the watch fails. It closes the watcher before returning.
func (x *tabletIndex) run(ctx context.Context) {
	defer x.w.Close()
	for ctx.Err() == nil {
		rev, err := x.build(ctx)
		if err != nil {
			if ctx.Err() == nil {
				x.log.Warn("building the tablet index", "err", err)
				sleepCtx(ctx, indexRetryDelay)
			}
			continue
		}
		x.follow(ctx, rev)
	}
}

// build reads the span page by page at one revision and swaps the result
// in; it returns the revision.
func (x *tabletIndex) build(ctx context.Context) (int64, error) {
	schemas := map[string]*tabulapb.TableSchema{}
	tablets := map[string]*tableTablets{}
	rev, err := meta.ReadTableMap(ctx, x.cli, x.layout, x.pageSize, func(e meta.MapEntry) {
		x.applyPut(schemas, tablets, e)
	})
	if err != nil {
		return 0, err
	}
	x.mu.Lock()
	x.schemas, x.tablets = schemas, tablets
	x.setRevLocked(rev)
	x.builds++
	for _, f := range x.feeds {
		f.markFull()
	}
	x.mu.Unlock()
	x.log.Debug("tablet index built", "rev", rev, "tables", len(schemas))
	return rev, nil
}

// follow applies the watch from rev+1 until it fails or ctx ends.
func (x *tabletIndex) follow(ctx context.Context, rev int64) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x.mu.Lock()
	x.stopWatch = cancel
	x.mu.Unlock()
	for resp := range x.w.Watch(wctx, rev+1) {
		if err := resp.Err; err != nil {
			if ctx.Err() == nil {
				x.log.Info("tablet index watch ended; rebuilding", "err", err)
			}
			return
		}
		x.mu.Lock()
		var splitParents map[string]bool // the splits this response commits
		if resp.Progress {
			// Every event up to the header's revision was delivered.
			x.setRevLocked(resp.Rev)
		}
		for _, e := range resp.Entries {
			x.feedLocked(e)
			if e.Deleted {
				x.applyDelete(e)
			} else {
				if p := x.applyPut(x.schemas, x.tablets, e); p != "" {
					if splitParents == nil {
						splitParents = map[string]bool{}
					}
					splitParents[p] = true
				}
			}
			x.setRevLocked(e.ModRevision)
		}
		x.mu.Unlock()
		// A split is one etcd transaction putting both children, so one
		// response: count each parent once.
		x.splits.Add(uint64(len(splitParents)))
	}
	if ctx.Err() == nil {
		x.log.Info("tablet index watch closed; rebuilding")
	}
}

// feedLocked tells the feeds of one changed key; mu is held.
func (x *tabletIndex) feedLocked(e meta.MapEntry) {
	for _, f := range x.feeds {
		switch e.Kind {
		case meta.MapTablet:
			f.add(tabletRef{e.Name, e.ID})
		case meta.MapTable:
			f.markFull() // a schema or state change concerns all its tablets
		}
	}
}

// setRevLocked moves rev forward and wakes waiters.
func (x *tabletIndex) setRevLocked(rev int64) {
	if rev <= x.rev {
		return
	}
	x.rev = rev
	close(x.advanced)
	x.advanced = make(chan struct{})
}

// applyPut records one key of the span. Undecodable values are logged and
// skipped. When the key is a tablet new to the index that was split from
// a parent, it returns "<table>/<parent id>" (for the split count).
func (x *tabletIndex) applyPut(schemas map[string]*tabulapb.TableSchema, tablets map[string]*tableTablets, e meta.MapEntry) (splitParent string) {
	switch {
	case e.Kind == meta.MapTable && e.Err != nil:
		x.log.Warn("tablet index: skipping table record", "key", e.Key, "err", e.Err)
		return ""
	case e.Kind == meta.MapTable:
		schemas[e.Name] = e.Table.Schema
		return ""
	case e.Kind != meta.MapTablet:
		return ""
	case e.Err != nil:
		x.log.Warn("tablet index: skipping tablet record", "key", e.Key, "err", e.Err)
		return ""
	}
	// The key names the tablet; meta took Table and ID from it.
	table, id, r := e.Name, e.ID, e.Tablet
	tt := tablets[table]
	if tt == nil {
		tt = &tableTablets{byID: map[string]*meta.VersionedTablet{}}
		tablets[table] = tt
	}
	if _, known := tt.byID[id]; !known && r.Parent != "" {
		splitParent = table + "/" + r.Parent
	}
	tt.remove(id)
	tt.insert(&r)
	return splitParent
}

// applyDelete forgets one key of the span; mu is held.
func (x *tabletIndex) applyDelete(e meta.MapEntry) {
	switch e.Kind {
	case meta.MapTable:
		delete(x.schemas, e.Name)
	case meta.MapTablet:
		if tt := x.tablets[e.Name]; tt != nil {
			tt.remove(e.ID)
			if len(tt.byID) == 0 {
				delete(x.tablets, e.Name)
			}
		}
	}
}

// search returns the position of the first tablet ordered at or after
// (start, id).
func (tt *tableTablets) search(start []byte, id string) int {
	return sort.Search(len(tt.sorted), func(i int) bool {
		t := tt.sorted[i]
		if c := bytes.Compare(t.Start, start); c != 0 {
			return c > 0
		}
		return t.ID >= id
	})
}

func (tt *tableTablets) insert(t *meta.VersionedTablet) {
	tt.sorted = slices.Insert(tt.sorted, tt.search(t.Start, t.ID), t)
	tt.byID[t.ID] = t
}

func (tt *tableTablets) remove(id string) {
	old := tt.byID[id]
	if old == nil {
		return
	}
	delete(tt.byID, id)
	i := tt.search(old.Start, old.ID)
	if i < len(tt.sorted) && tt.sorted[i] == old {
		tt.sorted = slices.Delete(tt.sorted, i, i+1)
	}
}

// atOrBefore returns the position of the last tablet starting at or
// before row, or -1.
func (tt *tableTablets) atOrBefore(row []byte) int {
	return sort.Search(len(tt.sorted), func(i int) bool { return bytes.Compare(tt.sorted[i].Start, row) > 0 }) - 1
}

// Rev returns the etcd revision the index reflects; 0 until it is built.
func (x *tabletIndex) Rev() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rev
}

// table returns a table's schema and its tablets in key order; ok is false
// if the index is not built or does not know the table.
func (x *tabletIndex) table(name string) (schema *tabulapb.TableSchema, tablets []*meta.VersionedTablet, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	schema = x.schemas[name]
	if x.rev == 0 || schema == nil {
		return nil, nil, false
	}
	if tt := x.tablets[name]; tt != nil {
		tablets = append([]*meta.VersionedTablet(nil), tt.sorted...)
	}
	return schema, tablets, true
}

// schemaList returns every table's schema; ok is false if the index is not
// built.
func (x *tabletIndex) schemaList() (out []*tabulapb.TableSchema, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.rev == 0 {
		return nil, false
	}
	for _, s := range x.schemas {
		out = append(out, s)
	}
	return out, true
}

// locate returns the tablet of table whose range holds row, or nil if the
// index is not built, does not know the table or has no such tablet.
func (x *tabletIndex) locate(table string, row []byte) *meta.VersionedTablet {
	x.mu.RLock()
	defer x.mu.RUnlock()
	tt := x.tablets[table]
	if x.rev == 0 || x.schemas[table] == nil || tt == nil {
		return nil
	}
	i := tt.atOrBefore(row)
	if i < 0 || !tt.sorted[i].Contains(row) {
		return nil
	}
	return tt.sorted[i]
}

// overlapping returns the tablets of table overlapping [start, end) in key
// order, at most limit of them (0: all); ok is false if the index is not
// built or does not know the table.
func (x *tabletIndex) overlapping(table string, start, end []byte, limit int) (out []*meta.VersionedTablet, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	tt := x.tablets[table]
	if x.rev == 0 || x.schemas[table] == nil || tt == nil {
		return nil, false
	}
	i := max(tt.atOrBefore(start), 0)
	for ; i < len(tt.sorted); i++ {
		t := tt.sorted[i]
		if len(end) > 0 && bytes.Compare(t.Start, end) >= 0 {
			break
		}
		if !t.Overlaps(start, end) {
			continue
		}
		out = append(out, t)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, true
}

// sync waits until the index reflects etcd as of now (the revision of a
// fresh linearizable read), so that a read served from it sees every write
// that completed before the call. It reports false if the index is not
// built or does not catch up within syncTimeout; the caller then reads
// etcd.
func (x *tabletIndex) sync(ctx context.Context) bool {
	if x.Rev() == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	want, err := meta.Revision(ctx, x.cli, x.layout)
	if err != nil {
		return false
	}
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		x.mu.RLock()
		rev, advanced := x.rev, x.advanced
		x.mu.RUnlock()
		if rev >= want {
			return true
		}
		// The revision may have moved outside the span (servers/, the
		// election): ask for a progress notification to learn it.
		if err := x.w.RequestProgress(ctx); err != nil {
			x.log.Debug("tablet index: progress request", "err", err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-advanced:
		case <-tick.C:
		}
	}
}

// cancelWatch ends the current watch, which makes the index rebuild.
func (x *tabletIndex) cancelWatch() {
	x.mu.Lock()
	stop := x.stopWatch
	x.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// buildCount returns how many builds completed.
func (x *tabletIndex) buildCount() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.builds
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// indexedWrites are the Master methods that change tables/ or tablets/.
var indexedWrites = map[string]bool{
	"CreateTable": true, "DeleteTable": true, "AddFamily": true, "ModifyFamily": true,
	"DeleteFamily": true, "SplitTablet": true, "Balance": true, "MergeTablets": true,
	"MoveTablet": true, "SetBalancer": true, "SetAutoMerge": true,
	"SetDeletionProtection": true,
}

// syncAfterWrite is the gRPC interceptor that, after a successful write,
// waits (bounded) for this master's index to catch up, so that the caller's
// next read of this master, locates included, sees the write.
func (m *Master) syncAfterWrite(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil && indexedWrites[path.Base(info.FullMethod)] {
		m.index.sync(ctx)
	}
	return resp, err
}

// all returns every schema and a copy of every tablet, sorted by table
// then start key; ok is false if the index is not built.
func (x *tabletIndex) all() (schemas map[string]*tabulapb.TableSchema, tablets []meta.VersionedTablet, rev int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.rev == 0 {
		return nil, nil, 0, false
	}
	schemas = make(map[string]*tabulapb.TableSchema, len(x.schemas))
	names := make([]string, 0, len(x.tablets))
	n := 0
	for name, s := range x.schemas {
		schemas[name] = s
	}
	for name, tt := range x.tablets {
		names = append(names, name)
		n += len(tt.sorted)
	}
	sort.Strings(names)
	tablets = make([]meta.VersionedTablet, 0, n)
	for _, name := range names {
		for _, t := range x.tablets[name].sorted {
			tablets = append(tablets, *t)
		}
	}
	return schemas, tablets, x.rev, true
}
