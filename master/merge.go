package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// Merges (docs/CONTRACTS.md §4, docs/OPERATIONS.md "Merges"). The master
// merges a range pair by pair, left to right: it moves the right tablet of
// a pair to the left one's server when they differ (an ordinary move:
// unload, then assign at epoch+1), waits until that server serves both,
// then asks it to merge them (tablet server MergeTablets); the server
// commits the new map. Retries go through NotServing answers (a tablet
// loading, moving or splitting) until mergeRetryFor has passed.

// mergeRetryFor bounds how long one pairwise merge is retried.
const mergeRetryFor = 2 * time.Minute

// errPairGone means a tablet of the pair no longer exists as planned (it
// split, merged, or the table went): the caller plans again.
var errPairGone = errors.New("master: tablet of the merge pair changed")

// MergeTablets merges the tablets overlapping [start_key, end_key) of a
// table into one. Operators may merge across the table's user split keys;
// those inside the merged range are forgotten.
func (m *Master) MergeTablets(ctx context.Context, req *tabulapb.MergeTabletsRequest) (*tabulapb.MergeTabletsResponse, error) {
	t, n, err := m.mergeRange(ctx, req.GetTable(), req.GetStartKey(), req.GetEndKey())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.MergeTabletsResponse{Tablet: t.ToProto(), Merges: int32(n)}, nil
}

// mergeRange merges the tablets overlapping [start, end) (empty end: to the
// end of the table) and returns the tablet covering them and the number of
// pairwise merges done.
func (m *Master) mergeRange(ctx context.Context, table string, start, end []byte) (meta.TabletRecord, int, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return meta.TabletRecord{}, 0, err
	}
	if len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return meta.TabletRecord{}, 0, cell.Invalidf("start key %q is not before end key %q", start, end)
	}
	term, err := m.lead(ctx)
	if err != nil {
		return meta.TabletRecord{}, 0, err
	}
	merges := 0
	deadline := time.Now().Add(mergeRetryFor)
	for {
		schema, tablets, err := m.tableAndTablets(ctx, table)
		if err != nil {
			return meta.TabletRecord{}, merges, err
		}
		if schema.GetState() == meta.TableDeleting {
			return meta.TabletRecord{}, merges, notFoundf("table %s is being deleted", table)
		}
		var over []meta.VersionedTablet
		for _, t := range tablets {
			if t.Overlaps(start, end) {
				over = append(over, t)
			}
		}
		tiled := len(over) > 0
		for i := 1; i < len(over); i++ {
			tiled = tiled && bytes.Equal(over[i-1].End, over[i].Start)
		}
		if !tiled {
			if time.Now().After(deadline) {
				return meta.TabletRecord{}, merges, notReadyf("the tablets of table %s do not tile [%q, %q) (the map is changing); retry", table, start, end)
			}
			if sleepCtx(ctx, 100*time.Millisecond); ctx.Err() != nil {
				return meta.TabletRecord{}, merges, ctx.Err()
			}
			continue
		}
		if len(over) == 1 {
			if merges > 0 {
				m.forgetUserSplitKeys(ctx, term, table, over[0].Start, over[0].End)
			}
			return over[0].TabletRecord, merges, nil
		}
		_, err = m.mergePair(ctx, term, table, over[0].ID, over[1].ID)
		if errors.Is(err, errPairGone) {
			continue
		}
		if err != nil {
			return meta.TabletRecord{}, merges, err
		}
		merges++
	}
}

// mergePair merges the adjacent tablets leftID and rightID of table. It
// moves the right one to the left one's server first if they differ.
func (m *Master) mergePair(ctx context.Context, term *leadership, table, leftID, rightID string) (meta.TabletRecord, error) {
	deadline := time.Now().Add(mergeRetryFor)
	backoff := 50 * time.Millisecond
	moved := false
	for attempt := 1; ; attempt++ {
		l, lerr := meta.GetTablet(ctx, m.cli, m.layout, table, leftID)
		r, rerr := meta.GetTablet(ctx, m.cli, m.layout, table, rightID)
		if errors.Is(lerr, meta.ErrNotFound) || errors.Is(rerr, meta.ErrNotFound) {
			return meta.TabletRecord{}, errPairGone
		}
		if err := errors.Join(lerr, rerr); err != nil {
			return meta.TabletRecord{}, err
		}
		if len(l.End) == 0 || !bytes.Equal(l.End, r.Start) {
			return meta.TabletRecord{}, errPairGone
		}
		servers, err := meta.GetServers(ctx, m.cli, m.layout)
		if err != nil {
			return meta.TabletRecord{}, err
		}
		snap := &snapshot{servers: map[string]meta.ServerRecord{}}
		for _, s := range servers {
			snap.servers[s.ID] = s
		}
		lsrv, lok := snap.owned(&l.TabletRecord)
		_, rok := snap.owned(&r.TabletRecord)
		var last error
		switch {
		case !lok || !rok:
			last = notReadyf("tablets %s and %s of table %s are not both held by a live server yet", leftID, rightID, table)
		case l.Server != r.Server && moved:
			last = notReadyf("tablet %s moved off %s again", rightID, lsrv.ID)
			moved = false // it moved away (balancing?): move it back once more
		case l.Server != r.Server:
			if err := m.move(ctx, term, r, lsrv); err != nil {
				last = err
				if errors.Is(err, ErrNotLeader) {
					return meta.TabletRecord{}, err
				}
			} else {
				moved = true
				term.assign.poke()
				last = notReadyf("tablet %s was moved to %s to be merged; waiting for it to load", rightID, lsrv.ID)
			}
		default:
			var resp *tabulapb.MergeResponse
			err := m.callServerTimeout(ctx, l.Address, m.opts.LoadTimeout, func(ctx context.Context, c tabulapb.TabletServerClient) error {
				var err error
				resp, err = c.MergeTablets(ctx, &tabulapb.MergeRequest{Left: ref(&l.TabletRecord), Right: ref(&r.TabletRecord)})
				return err
			})
			if err == nil {
				merged := meta.TabletFromProto(resp.GetTablet())
				term.assign.poke()
				m.counters.merges.Add(1)
				m.log.Info("merged tablets", "table", table, "left", leftID, "right", rightID, "merged", merged.ID,
					"server", merged.Server, "start", string(merged.Start), "end", string(merged.End), "attempts", attempt)
				return merged, nil
			}
			if !retryableDrop(err) {
				return meta.TabletRecord{}, fmt.Errorf("master: merging tablets %s and %s of table %s: %w", leftID, rightID, table, err)
			}
			last = err
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return meta.TabletRecord{}, notReadyf("merging tablets %s and %s of table %s: not done after %d attempts; last error: %v; call again to finish", leftID, rightID, table, attempt, last)
		}
		m.log.Debug("retrying merge", "table", table, "left", leftID, "right", rightID, "attempt", attempt, "err", last)
		if sleepCtx(ctx, backoff); ctx.Err() != nil {
			return meta.TabletRecord{}, ctx.Err()
		}
		backoff = min(2*backoff, time.Second)
	}
}

// forgetUserSplitKeys removes the user split keys strictly inside
// (start, end) from the table's schema: an operator merged across them.
// Best effort: a key left behind only keeps the automatic merge away from
// a boundary that no longer exists.
func (m *Master) forgetUserSplitKeys(ctx context.Context, term *leadership, table string, start, end []byte) {
	for attempt := 0; attempt < 5; attempt++ {
		rec, rev, err := meta.GetTable(ctx, m.cli, m.layout, table)
		if err != nil {
			return
		}
		s := cloneSchema(rec.Schema)
		kept := s.UserSplitKeys[:0]
		for _, k := range s.UserSplitKeys {
			if bytes.Compare(k, start) <= 0 || (len(end) > 0 && bytes.Compare(k, end) >= 0) {
				kept = append(kept, k)
			}
		}
		if len(kept) == len(rec.Schema.UserSplitKeys) {
			return
		}
		s.UserSplitKeys = kept
		if _, err := m.putSchema(ctx, term, s, rev); err == nil || !errors.Is(err, meta.ErrConflict) {
			if err != nil {
				m.log.Warn("forgetting user split keys", "table", table, "err", err)
			}
			return
		}
	}
}

// noteUserSplit records an operator's split row as a user split key;
// failures are logged (the split itself is done).
func (m *Master) noteUserSplit(ctx context.Context, table string, row []byte) {
	term, err := m.lead(ctx)
	if err == nil {
		err = m.rememberUserSplitKey(ctx, term, table, row)
	}
	if err != nil {
		m.log.Warn("recording a user split key", "table", table, "row", string(row), "err", err)
	}
}

// rememberUserSplitKey adds row to the table's user split keys (sorted,
// once): the user asked for a boundary there, which the automatic merge
// keeps.
func (m *Master) rememberUserSplitKey(ctx context.Context, term *leadership, table string, row []byte) error {
	for attempt := 0; ; attempt++ {
		rec, rev, err := meta.GetTable(ctx, m.cli, m.layout, table)
		if err != nil {
			return err
		}
		s := cloneSchema(rec.Schema)
		i, found := slices.BinarySearchFunc(s.UserSplitKeys, row, bytes.Compare)
		if found {
			return nil
		}
		s.UserSplitKeys = slices.Insert(s.UserSplitKeys, i, bytes.Clone(row))
		_, err = m.putSchema(ctx, term, s, rev)
		if err == nil || !errors.Is(err, meta.ErrConflict) || attempt >= 5 {
			return err
		}
	}
}
