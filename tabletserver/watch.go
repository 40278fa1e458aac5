package tabletserver

import (
	"context"
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
// Each server watches the whole tablets/ prefix and filters locally: one
// watch stream per server, events proportional to assignment changes in
// the cluster (not to data traffic). The initial read and the read after a
// broken watch are O(tablets), like the master's.

// watchAssignments runs until ctx is done.
func (s *Server) watchAssignments(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		rev, err := s.checkAssignments(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			err = s.followAssignments(ctx, rev+1)
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
// revision read.
func (s *Server) checkAssignments(ctx context.Context) (int64, error) {
	all, rev, err := meta.ReadAllTablets(ctx, s.etcd, s.layout)
	if err != nil {
		return 0, err
	}
	recs := make(map[string]*meta.TabletRecord, len(all))
	for i := range all {
		r := &all[i].TabletRecord
		recs[tabletKey(r.Table, r.ID)] = r
	}
	for _, h := range s.heldTablets("") {
		s.checkHeld(h, recs[tabletKey(h.table, h.id)])
	}
	return rev, nil
}

// followAssignments applies watch events from rev until the watch ends.
func (s *Server) followAssignments(ctx context.Context, rev int64) error {
	return meta.FollowTablets(ctx, s.etcd, s.layout, rev, func(ev meta.TabletEvent) {
		s.mu.RLock()
		h := s.tablets[tabletKey(ev.Table, ev.ID)]
		s.mu.RUnlock()
		if h == nil {
			return
		}
		var rec *meta.TabletRecord
		if !ev.Deleted {
			r, err := ev.Record()
			if err != nil {
				return // not a record this server understands
			}
			rec = &r
		}
		s.checkHeld(h, rec)
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
