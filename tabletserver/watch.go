package tabletserver

import (
	"context"
	"errors"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// A server that learns a tablet of its was handed on stops serving it at
// once (docs/OWNERSHIP.md). The master's protocol already makes sure it
// hands a tablet on only after its owner stopped; this watch is the second
// line: if etcd ever names another owner or a newer epoch for a tablet
// held here (an operator's edit, a bug, a lost unload), or deletes it, the
// server drops the tablet without flushing instead of serving it next to
// the new owner.
//
// Each server reads and watches only its own tablets: their mirrors under
// assignments/<id>/, which every writer of a tablet record keeps in the
// same transaction (meta/assignments.go, docs/CONTRACTS.md §4), so a
// change of another server's tablet never wakes it, and the read at start
// and after a broken watch is paged and proportional to its own tablets.
// In a cluster upgraded in place whose mirrors the master has not filled
// in yet (no assignments-ready key) it reads the whole of tablets/ (paged)
// and watches all of it as before, until the key appears.

// watchAssignments runs until ctx is done.
func (s *Server) watchAssignments(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		rev, indexed, err := s.checkAssignments(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			s.ownAssignments.Store(indexed)
			err = s.followAssignments(ctx, rev+1, indexed)
			if errors.Is(err, meta.ErrAssignmentsReady) {
				continue // read again, from the server's own mirrors
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.logger.Debug("watching assignments", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// checkAssignments compares every held tablet with etcd and returns the
// revision read and whether it came from the server's own mirrors.
func (s *Server) checkAssignments(ctx context.Context) (int64, bool, error) {
	mine, rev, indexed, err := meta.ReadServerTablets(ctx, s.etcd, s.layout, s.id, s.opts.EtcdPageSize)
	if err != nil {
		return 0, false, err
	}
	recs := make(map[string]*meta.TabletRecord, len(mine))
	for i := range mine {
		r := &mine[i].TabletRecord
		recs[tabletKey(r.Table, r.ID)] = r
	}
	for _, h := range s.heldTablets("") {
		rec := recs[tabletKey(h.table, h.id)]
		if rec == nil {
			// Not assigned here at rev: moved, released or deleted, or
			// loaded after rev. Only its record tells which.
			if rec, err = s.currentRecord(ctx, h); err != nil {
				return 0, false, err
			}
		}
		s.checkHeld(h, rec)
	}
	return rev, indexed, nil
}

// currentRecord reads h's tablet record now; nil if it is gone.
func (s *Server) currentRecord(ctx context.Context, h *held) (*meta.TabletRecord, error) {
	vt, err := meta.GetTablet(ctx, s.etcd, s.layout, h.table, h.id)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &vt.TabletRecord, nil
}

// followAssignments applies watch events from rev until the watch ends.
func (s *Server) followAssignments(ctx context.Context, rev int64, indexed bool) error {
	return meta.FollowServerTablets(ctx, s.etcd, s.layout, s.id, rev, indexed, func(ev meta.TabletEvent) error {
		s.mu.RLock()
		h := s.tablets[tabletKey(ev.Table, ev.ID)]
		s.mu.RUnlock()
		s.assignmentEvents.Add(1)
		if h == nil {
			return nil
		}
		var rec *meta.TabletRecord
		switch {
		case ev.Deleted && indexed:
			// No longer assigned here, which an older change (a tablet
			// that moved away and back) says too: the record decides.
			r, err := s.currentRecord(ctx, h)
			if err != nil {
				return err
			}
			rec = r
		case !ev.Deleted:
			r, err := ev.Record()
			if err != nil {
				return nil // not a record this server understands
			}
			rec = &r
		}
		s.checkHeld(h, rec)
		return nil
	})
}

// checkHeld drops h if rec (nil: the key is gone) hands it on: a newer
// epoch, or the same epoch without this server. A tablet being split is
// left to the split, which deletes its key itself.
func (s *Server) checkHeld(h *held, rec *meta.TabletRecord) {
	if h.splitting.Load() {
		return
	}
	var reason string
	switch {
	case rec == nil:
		reason = "its etcd record is gone"
	case rec.Epoch > h.epoch:
		reason = "etcd assigns it at a newer epoch"
	case rec.Epoch == h.epoch && rec.Server != s.id:
		reason = "etcd assigns it to another server"
	default:
		return
	}
	s.mu.RLock()
	still := s.tablets[tabletKey(h.table, h.id)] == h
	s.mu.RUnlock()
	if s.closed.Load() || !still {
		return
	}
	s.work.run(func(context.Context) { s.drop(h, reason, rec) })
}

// drop stops serving h without flushing (another owner may be writing its
// folder) and never serves its epoch again.
func (s *Server) drop(h *held, reason string, rec *meta.TabletRecord) {
	key := tabletKey(h.table, h.id)
	unlock := s.keys.lock(key)
	defer unlock()
	s.mu.Lock()
	if s.tablets[key] != h || h.splitting.Load() {
		s.mu.Unlock()
		return
	}
	delete(s.tablets, key)
	s.noteUnloadedLocked(key, h.epoch)
	s.mu.Unlock()
	if err := h.t.Close(); err != nil {
		s.logger.Debug("closing a tablet handed on", "tablet", key, "err", err)
	}
	args := []any{"tablet", key, "epoch", h.epoch, "reason", reason}
	if rec != nil {
		args = append(args, "etcd_server", rec.Server, "etcd_epoch", rec.Epoch)
	}
	s.logger.Warn("stopped serving a tablet etcd hands on", args...)
}
