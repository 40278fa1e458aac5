package tabletserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// Merges are asked for by the master (MergeTablets), which first moves
// both tablets to one server; the server does them like splits
// (docs/CONTRACTS.md §4):
//
//  1. mark both parents busy (data calls get NotServing; clients retry)
//     and read their etcd records with their ModRevisions, checking that
//     both are still assigned here at the held epochs, under this lease;
//  2. tablet.Merge into a new folder (a fresh meta.NewTabletID id): the
//     engine flushes both parents, writes one manifest referencing both's
//     files and closes them;
//  3. meta.CommitMerge: one etcd transaction, guarded by both parents'
//     ModRevisions and this server's lease, deletes both parents and puts
//     the merged tablet assigned here at max(parent epochs)+1;
//  4. on success open the merged tablet and serve it; on conflict remove
//     its folder and reopen each parent etcd still assigns here at its
//     epoch;
//  5. when the commit's answer is lost, settle it with meta.FenceMerge
//     (guarded by both parents' ModRevisions) and go on as in 4; if even
//     the fence gets no answer keep the merged folder and drop both
//     parents for good at their epochs (dropUnsettled, as a split does).
//
// A crash before step 3 leaves both parents in etcd with their folders
// whole (the merged folder is an orphan the master's sweep deletes); a
// crash after it leaves the merged tablet in etcd, whose manifest names
// every file it needs. The parents' folders are deleted once no tablet
// references their files (collectParents).

// MergeTablets merges two adjacent tablets held here (left before right)
// into one and answers it, served here at max(epochs)+1. Either tablet
// not held at the given epoch answers NotServing, and the master retries
// after moving it here.
func (s *Server) MergeTablets(ctx context.Context, req *tabulapb.MergeRequest) (*tabulapb.MergeResponse, error) {
	lref, rref := req.GetLeft(), req.GetRight()
	lh, err := s.resolve(lref, nil)
	if err != nil {
		return nil, toStatus(ctx, err, lref.GetTable(), lref.GetTabletId(), nil)
	}
	rh, err := s.resolve(rref, nil)
	if err != nil {
		return nil, toStatus(ctx, err, rref.GetTable(), rref.GetTabletId(), nil)
	}
	merged, err := s.merge(ctx, lh, rh)
	if err != nil {
		return nil, toStatus(ctx, err, lref.GetTable(), lref.GetTabletId(), nil)
	}
	return &tabulapb.MergeResponse{Tablet: merged.ToProto()}, nil
}

// merge merges the adjacent tablets lh and rh (lh's range ends where rh's
// begins) and returns the merged tablet's record.
func (s *Server) merge(ctx context.Context, lh, rh *held) (_ meta.TabletRecord, err error) {
	begin := time.Now()
	if lh.table != rh.table {
		return meta.TabletRecord{}, cell.Invalidf("tablets %s and %s belong to different tables", lh.id, rh.id)
	}
	if lh == rh {
		return meta.TabletRecord{}, cell.Invalidf("a tablet cannot be merged with itself")
	}
	// Key locks in range order (left, right), as every merge takes them.
	lkey, rkey := tabletKey(lh.table, lh.id), tabletKey(rh.table, rh.id)
	defer s.keys.lock(lkey)()
	defer s.keys.lock(rkey)()
	s.mu.RLock()
	curL, curR, gen := s.tablets[lkey], s.tablets[rkey], s.gen.Load()
	s.mu.RUnlock()
	if curL != lh || curR != rh {
		return meta.TabletRecord{}, notServing(lh.table, lh.id, nil, "tablet is no longer served here")
	}
	if !lh.splitting.CompareAndSwap(false, true) {
		return meta.TabletRecord{}, notServing(lh.table, lh.id, nil, "tablet is splitting or merging")
	}
	if !rh.splitting.CompareAndSwap(false, true) {
		lh.splitting.Store(false)
		return meta.TabletRecord{}, notServing(rh.table, rh.id, nil, "tablet is splitting or merging")
	}
	parentsClosed := false
	defer func() {
		if err != nil && !parentsClosed {
			lh.splitting.Store(false)
			rh.splitting.Store(false)
		}
	}()

	lstart, lend := lh.t.Range()
	rstart, rend := rh.t.Range()
	if len(lend) == 0 || !bytes.Equal(lend, rstart) {
		return meta.TabletRecord{}, cell.Invalidf("tablets %s [%q, %q) and %s [%q, %q) are not adjacent", lh.id, lstart, lend, rh.id, rstart, rend)
	}
	var parents [2]meta.VersionedTablet
	for i, h := range []*held{lh, rh} {
		p, err := meta.GetTablet(ctx, s.etcd, s.layout, h.table, h.id)
		if err != nil {
			return meta.TabletRecord{}, err
		}
		if p.Server != s.id || p.Epoch != h.epoch || p.Lease != s.leaseID.Load() {
			return meta.TabletRecord{}, fmt.Errorf("%w: etcd assigns tablet %s/%s to %q at epoch %d under lease %x", ErrNotAssigned, h.table, h.id, p.Server, p.Epoch, p.Lease)
		}
		parents[i] = p
	}
	merged := meta.TabletRecord{
		Table: lh.table, ID: meta.NewTabletID(), Start: parents[0].Start, End: parents[1].End,
		State: meta.StateAssigned, Server: s.id, Address: s.addr, Lease: parents[0].Lease,
		Epoch: max(parents[0].Epoch, parents[1].Epoch) + 1, MergedFrom: []string{lh.id, rh.id},
	}
	// Hold the merged tablet's key lock from before the commit until it is
	// served (as a split holds its children's): a LoadTablet the master
	// sends once the commit is visible waits, then finds it held.
	mkey := tabletKey(merged.Table, merged.ID)
	defer s.keys.lock(mkey)()
	dir, err := s.tabletPath(merged.Table, merged.ID)
	if err != nil {
		return meta.TabletRecord{}, err
	}
	removeMerged := func() {
		if err := storepath.RemoveTabletDir(s.fs(), s.opts.DataDir, dir); err != nil {
			s.logger.Warn("removing merged tablet folder", "dir", dir, "err", err)
		}
	}
	sizes := [2]uint64{lh.t.Stats().SizeBytes, rh.t.Stats().SizeBytes}

	parentsClosed = true // tablet.Merge closes both parents whether or not it succeeds
	if err := tablet.Merge(ctx, lh.t, rh.t, dir); err != nil {
		removeMerged()
		s.reopenParent(lh, gen)
		s.reopenParent(rh, gen)
		return meta.TabletRecord{}, fmt.Errorf("tabletserver: merging tablets %s and %s: %w", lkey, rkey, err)
	}
	if s.testHookMergeWritten != nil {
		s.testHookMergeWritten(merged)
	}

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), splitCommitTimeout)
	defer cancel()
	err = meta.CommitMerge(cctx, s.etcd, s.layout, parents[0].ModRevision, parents[1].ModRevision, parents[0].TabletRecord, parents[1].TabletRecord, merged)
	if err != nil && !errors.Is(err, meta.ErrConflict) {
		// The transaction may have committed, or may still: settle it.
		outcome, ferr := s.settle(ctx, func(ctx context.Context) (meta.Outcome, error) {
			return meta.FenceMerge(ctx, s.etcd, s.layout, parents[0].ModRevision, parents[1].ModRevision, parents[0].TabletRecord, parents[1].TabletRecord, merged)
		})
		switch outcome {
		case meta.Committed:
			err = nil
		case meta.Unknown:
			// Keep the merged folder (etcd may name it) and never serve
			// the parents at these epochs again.
			s.dropUnsettled(lh)
			s.dropUnsettled(rh)
			return meta.TabletRecord{}, fmt.Errorf("tabletserver: merge of %s and %s: outcome unknown (%v): %w", lkey, rkey, ferr, err)
		}
	}
	if err != nil {
		removeMerged()
		s.reopenParent(lh, gen)
		s.reopenParent(rh, gen)
		return meta.TabletRecord{}, fmt.Errorf("tabletserver: committing merge of %s and %s: %w", lkey, rkey, err)
	}

	// Open the merged tablet, then swap it for the parents in one step, so
	// the served set never lacks the range.
	fams, err := s.familiesOf(merged.Table)
	var opened []*held
	if err == nil {
		t, oerr := s.openEngine(dir, fams, merged.Start, merged.End, merged.Epoch, false)
		if oerr != nil {
			err = fmt.Errorf("tabletserver: opening merged tablet %s: %w", merged.ID, oerr)
		} else {
			m := &held{table: merged.Table, id: merged.ID, epoch: merged.Epoch, dir: dir, t: t}
			// A merged tablet was cold; it must not be split by load at
			// once if it turns hot (no back and forth with the automatic
			// merge).
			m.hot.quietUntil = time.Now().Add(s.opts.HotSplitCooldown)
			opened = append(opened, m)
		}
	}
	installed := s.install(gen, nil, []*held{lh, rh}, opened...) == nil
	s.collectLater(splitParent{table: lh.table, dir: lh.dir}, splitParent{table: rh.table, dir: rh.dir})
	lh.t.Close()
	rh.t.Close()
	s.logger.Info("merged tablets", "event", "merge", "table", merged.Table, "left", lh.id, "right", rh.id, "merged", merged.ID,
		"start", merged.Start, "end", merged.End, "left_bytes", sizes[0], "right_bytes", sizes[1],
		"epoch", merged.Epoch, "duration", time.Since(begin).Round(time.Millisecond))
	if !installed {
		return merged, nil // fenced or closing: the master reassigns it
	}
	if err != nil {
		// The merge is committed; a tablet this server failed to open is
		// handed back to the master.
		s.logger.Error("serving merged tablet", "tablet", mkey, "err", err)
		s.releaseChildren(cctx, merged)
	}
	return merged, nil
}
