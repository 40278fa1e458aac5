package tabletserver

import (
	"context"
	"errors"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// A tablet whose commit log or manifest cannot be written (an I/O error,
// a full disk) takes no more writes and cannot flush; kept in service it
// would answer errors forever and hold its memtable against the server's
// memory budget until every writer of the server stalls. So the server
// takes it out of service at once: it drops and closes it WITHOUT
// flushing (its log holds every acknowledged write), promises never to
// serve that epoch again, and releases the assignment in etcd (the owner's
// own confirmation that it stopped), so the master gives the tablet to a
// server whose next open replays the log. The server's other tablets are
// unaffected.

// releaseRetries bounds the attempts to release a failed tablet in etcd;
// if they all fail the tablet stays assigned here, unserved, until the
// master notices (or this server's lease ends).
const releaseRetries = 10

// tabletFailed is every engine's Options.OnFailure: it starts taking the
// tablet out of service in the background (the engine must not block).
func (s *Server) tabletFailed(table, id string, epoch int64, cause error) {
	if s.closed.Load() {
		return
	}
	// Not once Close stopped the work group: Close closes the tablet.
	s.work.run(func(context.Context) { s.retire(table, id, epoch, cause) })
}

// retire takes a failed tablet out of service and releases it.
func (s *Server) retire(table, id string, epoch int64, cause error) {
	key := tabletKey(table, id)
	unlock := s.keys.lock(key)
	defer unlock()
	s.mu.Lock()
	h := s.tablets[key]
	if h == nil || h.epoch != epoch {
		s.mu.Unlock()
		return
	}
	delete(s.tablets, key)
	s.noteUnloadedLocked(key, epoch)
	s.mu.Unlock()
	if err := h.t.Close(); err != nil {
		s.logger.Debug("closing failed tablet", "tablet", key, "err", err)
	}
	s.failures.Add(1)
	s.logger.Error("tablet failed and left service; its next owner replays its log", "tablet", key, "epoch", epoch, "err", cause)
	// If the shared log is what failed, start its successor now, not at
	// the next load (logrenew.go).
	s.renewFailedLog()
	lease := s.leaseID.Load()
	for attempt := 0; attempt < releaseRetries && !s.closed.Load(); attempt++ {
		err := s.release(table, id, epoch, lease)
		if err == nil || errors.Is(err, meta.ErrNotFound) || errors.Is(err, errNotOurs) {
			return
		}
		s.logger.Warn("releasing failed tablet", "tablet", key, "attempt", attempt+1, "err", err)
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
}

var errNotOurs = errors.New("tabletserver: tablet no longer assigned here")

// release marks the tablet unassigned in etcd if it is still assigned
// here at epoch under lease.
func (s *Server) release(table, id string, epoch, lease int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), splitCommitTimeout)
	defer cancel()
	vt, err := meta.GetTablet(ctx, s.etcd, s.layout, table, id)
	if err != nil {
		return err
	}
	if vt.Server != s.id || vt.Epoch != epoch || vt.Lease != lease {
		return errNotOurs
	}
	_, err = meta.Update(ctx, s.etcd, s.layout, vt, meta.Unassigned(vt.TabletRecord))
	return err
}

// Failures returns how many tablets left service because their commit log
// or manifest failed.
func (s *Server) Failures() int64 { return s.failures.Load() }
