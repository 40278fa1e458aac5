package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// dropRetryFor bounds how long DropRowRange keeps retrying tablets that
// are moving, splitting or whose server died (their new owner must load
// them first); the caller's deadline bounds it too. A var for tests.
var dropRetryFor = 2 * time.Minute

// dropParallel is how many tablets are asked at once.
const dropParallel = 8

// DropRowRange deletes, in bulk, every cell written before the call of the
// rows starting with row_key_prefix, or of every row of the table
// (delete_all_data_from_table): each tablet overlapping the range drops it
// by removing whole SSTables (tablet.DropRange), never cell by cell. It
// returns when every part of the range has been dropped by the tablet
// holding it; tablets that move, split or lose their server meanwhile are
// asked again at their new owner (the part a tablet already dropped stays
// dropped in its children and at its next owner). A range not wholly done
// within the retry budget or the caller's deadline fails (UNAVAILABLE):
// some tablets may have dropped their part; calling again is safe.
func (m *Master) DropRowRange(ctx context.Context, req *tabulapb.DropRowRangeRequest) (*tabulapb.DropRowRangeResponse, error) {
	return &tabulapb.DropRowRangeResponse{}, toStatus(ctx, m.dropRowRange(ctx, req))
}

func (m *Master) dropRowRange(ctx context.Context, req *tabulapb.DropRowRangeRequest) error {
	table := req.GetTable()
	if err := cell.ValidateTableName(table); err != nil {
		return err
	}
	var want keySpan
	switch tg := req.GetTarget().(type) {
	case *tabulapb.DropRowRangeRequest_RowKeyPrefix:
		p := tg.RowKeyPrefix
		if len(p) == 0 {
			return cell.Invalidf("row_key_prefix is empty: to drop every row set delete_all_data_from_table")
		}
		if err := cell.ValidateRow(p); err != nil {
			return cell.Invalidf("row_key_prefix: %v", err)
		}
		want = keySpan{start: bytes.Clone(p), end: prefixEnd(p)}
	case *tabulapb.DropRowRangeRequest_DeleteAllDataFromTable:
		if !tg.DeleteAllDataFromTable {
			return cell.Invalidf("delete_all_data_from_table is false: set it, or give a row_key_prefix")
		}
	default:
		return cell.Invalidf("give a row_key_prefix or delete_all_data_from_table")
	}
	if _, err := m.lead(ctx); err != nil {
		return err
	}
	var done spanSet
	deadline := time.Now().Add(dropRetryFor)
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, tablets, err := m.tableAndTablets(ctx, table)
		if err != nil {
			return err // the table is gone, or etcd failed: the caller retries
		}
		var todo []meta.VersionedTablet
		var parts []keySpan
		for _, t := range tablets {
			sp, ok := want.intersect(keySpan{start: t.Start, end: t.End})
			if ok && !done.covers(sp) {
				todo = append(todo, t)
				parts = append(parts, sp)
			}
		}
		if len(todo) == 0 && done.covers(want) {
			m.log.Info("dropped row range", "table", table, "start", string(want.start), "end", string(want.end), "attempts", attempt)
			return nil
		}
		errs := m.dropOnTablets(ctx, table, todo, parts)
		var last error
		for i, err := range errs {
			if err == nil {
				done.add(parts[i])
				continue
			}
			if !retryableDrop(err) {
				return fmt.Errorf("master: drop row range of table %s: tablet %s [%q, %q): %w", table, todo[i].ID, todo[i].Start, todo[i].End, err)
			}
			last = err
		}
		if done.covers(want) {
			continue // confirm against a fresh map: nothing left
		}
		if last == nil {
			// No tablet covers a part (the map is changing): look again.
			last = notReadyf("no tablet holds part of the range")
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return notReadyf("drop row range of table %s: not every tablet dropped its part after %d attempts (some may have); last error: %v; call again to finish", table, attempt, last)
		}
		m.log.Debug("retrying drop row range", "table", table, "attempt", attempt, "err", last)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// dropOnTablets asks the server of each tablet to drop its part, a few at
// once; errs[i] is tablet i's answer.
func (m *Master) dropOnTablets(ctx context.Context, table string, tablets []meta.VersionedTablet, parts []keySpan) []error {
	errs := make([]error, len(tablets))
	sem := make(chan struct{}, dropParallel)
	var wg sync.WaitGroup
	for i := range tablets {
		t := tablets[i]
		if t.Address == "" || t.State == meta.StateUnassigned {
			errs[i] = notReadyf("tablet %s of table %s is not assigned to a server yet", t.ID, table)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// Dropping may rewrite SSTables partly in the range: as long
			// as a compaction, so the longer load timeout bounds it.
			errs[i] = m.callServerTimeout(ctx, t.Address, m.opts.LoadTimeout, func(ctx context.Context, c tabulapb.TabletServerClient) error {
				_, err := c.DropRange(ctx, &tabulapb.DropRangeRequest{Tablet: ref(&t.TabletRecord), StartKey: parts[i].start, EndKey: parts[i].end})
				return err
			})
		}()
	}
	wg.Wait()
	return errs
}

// callServerTimeout is callServer with its own timeout.
func (m *Master) callServerTimeout(ctx context.Context, addr string, d time.Duration, call func(context.Context, tabulapb.TabletServerClient) error) error {
	c, err := m.conns.client(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return call(ctx, c)
}

// retryableDrop reports whether a tablet's failure to drop may go away by
// asking again, after the map changes: the tablet moved, split or is
// loading (NotServing, FAILED_PRECONDITION), its server is down or
// overloaded, or a call timed out.
func retryableDrop(err error) bool {
	if errors.Is(err, ErrNotReady) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.FailedPrecondition, codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted, codes.Canceled:
		return true
	}
	return false
}

// prefixEnd is the smallest row greater than every row starting with p, or
// nil when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// keySpan is the rows [start, end); an empty start is the first row, an
// empty end is past the last.
type keySpan struct{ start, end []byte }

func (s keySpan) intersect(o keySpan) (keySpan, bool) {
	out := s
	if bytes.Compare(o.start, out.start) > 0 {
		out.start = o.start
	}
	if len(o.end) > 0 && (len(out.end) == 0 || bytes.Compare(o.end, out.end) < 0) {
		out.end = o.end
	}
	return out, len(out.end) == 0 || bytes.Compare(out.start, out.end) < 0
}

// spanSet is a union of key spans.
type spanSet struct{ spans []keySpan }

func (s *spanSet) add(sp keySpan) { s.spans = append(s.spans, sp) }

// covers reports whether the union holds every row of sp.
func (s *spanSet) covers(sp keySpan) bool {
	sorted := append([]keySpan(nil), s.spans...)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i].start, sorted[j].start) < 0 })
	cur := sp.start // every row before cur (from sp.start) is covered
	for _, d := range sorted {
		if bytes.Compare(d.start, cur) > 0 {
			break // a gap at cur
		}
		if len(d.end) == 0 {
			return true
		}
		if bytes.Compare(d.end, cur) > 0 {
			cur = d.end
		}
		if len(sp.end) > 0 && bytes.Compare(cur, sp.end) >= 0 {
			return true
		}
	}
	return len(sp.end) > 0 && bytes.Compare(cur, sp.end) >= 0
}
