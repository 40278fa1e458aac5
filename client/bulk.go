package client

import (
	"context"
	"sort"
	"sync"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/locator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// bulkEntry is one row of an ApplyBulk call.
type bulkEntry struct {
	index      int
	row        []byte
	muts       []*tabulapb.Mutation
	idempotent bool
	tablet     locator.Tablet
}

// ApplyBulk applies muts[i] to rows[i] for every i. Rows are not applied
// atomically together: errs[i] is row i's outcome (nil when applied). The
// rows are grouped per tablet server and sent in parallel; entries that
// fail with a retryable error are retried as Apply would retry them. err
// is non-nil only when the call as a whole is wrong (mismatched lengths)
// or its context ended, in which case errs still says which rows were
// applied.
func (t *Table) ApplyBulk(ctx context.Context, rows [][]byte, muts []*Mutation) (errs []error, err error) {
	if len(rows) != len(muts) {
		return nil, invalid("ApplyBulk got %d rows and %d mutations; give one mutation per row", len(rows), len(muts))
	}
	errs = make([]error, len(rows))
	var pending []*bulkEntry
	for i := range rows {
		pm, err := muts[i].checked(rows[i])
		if err != nil {
			errs[i] = err
			continue
		}
		pending = append(pending, &bulkEntry{index: i, row: rows[i], muts: pm, idempotent: muts[i].Idempotent()})
	}
	r := t.c.newRetrier()
	for len(pending) > 0 {
		if ctx.Err() != nil {
			break
		}
		var retry []*bulkEntry
		var lastRetryable error
		onlyMoved := true // every retry is of an entry whose tablet moved
		groups := map[string][]*bulkEntry{}
		for _, e := range pending {
			tab, err := t.c.loc.Locate(ctx, t.name, e.row)
			if err != nil {
				ok, st := locateError(err)
				errs[e.index] = st
				if ok && ctx.Err() == nil {
					retry = append(retry, e)
					lastRetryable = st
					onlyMoved = false
				}
				continue
			}
			e.tablet = tab
			groups[tab.Address] = append(groups[tab.Address], e)
		}
		var mu sync.Mutex // protects retry, lastRetryable and onlyMoved below
		var wg sync.WaitGroup
		for addr, group := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				again := t.sendBulk(ctx, addr, group, errs)
				if len(again) > 0 {
					mu.Lock()
					retry = append(retry, again...)
					lastRetryable = errs[again[0].index]
					for _, e := range again {
						if !isReroute(errs[e.index]) {
							onlyMoved = false
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(retry) == 0 {
			break
		}
		if len(retry) < len(pending) {
			r.progress()
		}
		if onlyMoved {
			// The locator has cached the new locations: go there now.
			r.last = lastRetryable
		} else if werr := r.wait(ctx, lastRetryable); werr != nil {
			break
		}
		pending = retry
	}
	if ctx.Err() != nil {
		return errs, contextStatus(ctx, nil)
	}
	return errs, nil
}

// Limits of one MutateRows request: the server takes messages of up to
// MaxMessageBytes; stay well below it.
const (
	maxBulkEntries = 10000
	maxBulkBytes   = 32 << 20
)

// sendBulk sends one server's entries in MutateRows calls of bounded
// size, one after the other, records each entry's outcome in errs and
// returns the entries to retry. Idempotent and non-idempotent entries go
// in separate calls, so that calls of idempotent entries can be re-routed
// (see sendChunk).
func (t *Table) sendBulk(ctx context.Context, addr string, group []*bulkEntry, errs []error) (retry []*bulkEntry) {
	sort.SliceStable(group, func(i, j int) bool { return group[i].idempotent && !group[j].idempotent })
	for len(group) > 0 {
		n, size := 0, 0
		for n < len(group) && n < maxBulkEntries && group[n].idempotent == group[0].idempotent {
			sz := len(group[n].row) + 64
			for _, m := range group[n].muts {
				sz += proto.Size(m)
			}
			if n > 0 && size+sz > maxBulkBytes {
				break
			}
			size += sz
			n++
		}
		retry = append(retry, t.sendChunk(ctx, addr, group[:n], errs)...)
		group = group[n:]
	}
	return retry
}

// sendChunk sends entries in one MutateRows call. When every entry is
// idempotent, the call's tablets are checked while it waits
// (checkLocation): if one moved, the call is abandoned and every entry
// retried at once, each at its tablet's current location.
func (t *Table) sendChunk(ctx context.Context, addr string, group []*bulkEntry, errs []error) (retry []*bulkEntry) {
	ts, err := t.c.pool.server(addr)
	if err != nil {
		for _, e := range group {
			errs[e.index] = err
		}
		return nil
	}
	req := &tabulapb.MutateRowsRequest{Entries: make([]*tabulapb.MutateRowsRequest_Entry, len(group))}
	for i, e := range group {
		req.Entries[i] = &tabulapb.MutateRowsRequest_Entry{Tablet: e.tablet.Ref(), RowKey: e.row, Mutations: e.muts}
	}
	actx, cancel := t.c.attempt(ctx)
	var check *locationCheck
	if group[0].idempotent { // then all are (sendBulk)
		check = t.c.checkLocation(actx, cancel, chunkTablets(group)...)
	}
	resp, err := ts.MutateRows(actx, req)
	moved := check.stop()
	if err != nil && ctx.Err() == nil && moved != nil {
		err = moved
	} else if err != nil && attemptTimedOut(ctx, actx) {
		err = t.c.timeoutError(addr, err)
	}
	cancel(nil)
	if err != nil {
		// The whole call failed: each entry's fate is unknown.
		for _, e := range group {
			retry = t.settle(ctx, e, err, errs, retry)
		}
		return retry
	}
	seen := make([]bool, len(group))
	for _, pe := range resp.GetEntries() {
		i := pe.GetIndex()
		if i < 0 || i >= int64(len(group)) || seen[i] {
			continue
		}
		seen[i] = true
		var eerr error
		if c := codes.Code(pe.GetCode()); c != codes.OK {
			st := status.New(c, pe.GetMessage())
			if ns := pe.GetNotServing(); ns != nil {
				if d, derr := st.WithDetails(ns); derr == nil {
					st = d
				}
			}
			eerr = st.Err()
		}
		retry = t.settle(ctx, group[i], eerr, errs, retry)
	}
	for i, e := range group {
		if !seen[i] {
			retry = t.settle(ctx, e, status.Error(codes.Unavailable, "client: the server's answer left this entry out"), errs, retry)
		}
	}
	return retry
}

// settle records e's outcome err and appends e to retry if it should be
// tried again.
func (t *Table) settle(ctx context.Context, e *bulkEntry, err error, errs []error, retry []*bulkEntry) []*bulkEntry {
	errs[e.index] = err
	if err == nil {
		return retry
	}
	if ctx.Err() != nil {
		return retry
	}
	if isReroute(err) {
		return append(retry, e)
	}
	again, evict := serverError(err, e.idempotent)
	if evict {
		t.c.loc.Invalidate(e.tablet)
	}
	if again {
		return append(retry, e)
	}
	return retry
}

// chunkTablets returns the distinct tablets of entries, each with a row of
// it.
func chunkTablets(entries []*bulkEntry) []placed {
	var out []placed
	seen := make(map[string]bool)
	for _, e := range entries {
		if !seen[e.tablet.ID] {
			seen[e.tablet.ID] = true
			out = append(out, placed{e.tablet, e.row})
		}
	}
	return out
}
