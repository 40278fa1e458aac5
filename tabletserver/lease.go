package tabletserver

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// Self-fencing and riding out coordination outages (docs/OWNERSHIP.md).
//
// The server renews its lease itself with KeepAliveOnce every TTL/3 (every
// tick while renewals fail) and remembers when each successful renewal was
// SENT: etcd cannot expire the lease before sendTime+TTL. The server serves
// only while now < lastSuccessfulSend + TTL - margin (margin = TTL/4);
// every data call checks that bound against the monotonic clock, so
// requests stop at the deadline even if the renewal loop is stuck.
//
// When the bound passes the server PAUSES: it answers nothing and its
// tablets take no writes, flushes or compactions (the write guard refuses),
// but they stay open. What happens next depends on the lease, never on
// time alone:
//   - a renewal of the SAME lease succeeds (etcd was briefly unreachable,
//     or restarted and kept its leases): nobody can have been given the
//     tablets meanwhile, since the master hands a tablet on only after its
//     owner's lease expired or the owner confirmed an unload; the server
//     resumes serving them, with no reassignment and no replay;
//   - etcd answers that the lease is gone: the tablets may be someone
//     else's now. The server drops and closes them all WITHOUT flushing
//     (the next owner replays their logs), then registers under a new
//     lease, owning nothing.

// sinceBase returns the monotonic time since the server's base instant.
func (s *Server) sinceBase() time.Duration { return time.Since(s.base) }

// leaseSafe reports whether the server may serve: its lease cannot have
// expired at etcd yet (with a margin).
func (s *Server) leaseSafe() bool {
	return s.sinceBase() < time.Duration(s.safeUntil.Load())
}

// owns reports whether the server may still answer for h: its lease is
// safe AND it is still the registration h was loaded under. A process
// paused (SIGSTOP, a long GC or swap) between the check before a write and
// its answer may wake after another server has taken the tablet and
// replayed its log; acknowledging then would let two owners acknowledge
// writes. A write is durable before this check, so if the check passes the
// lease was still held when it became durable and the next owner's replay
// has it. A server that
// lost its lease while a call was in flight (paused past it, say) drops its
// tablets and registers under a new lease; the new lease being safe says
// nothing about the old tablets, whose next owner may have replayed their
// log before the call's write reached it. leaseSafe is read first: a safe
// bound of the new lease is only stored after the generation was bumped.
func (s *Server) owns(h *held) bool {
	return s.leaseSafe() && h.gen == s.gen.Load()
}

// ackFor turns the result of a write served by h that succeeded into
// ErrOutcomeUnknown unless the server still owns h.
func (s *Server) ackFor(h *held, err error) error {
	if err == nil && !s.owns(h) {
		return ErrOutcomeUnknown
	}
	return err
}

func (s *Server) leaseMargin() time.Duration { return s.opts.LeaseTTL / 4 }

// register grants a new lease, releases the tablets etcd still assigns to
// this server's id under another lease (a newly registered server holds
// none), and puts servers/<id> under the lease.
func (s *Server) register(ctx context.Context) error {
	ttl := s.opts.LeaseTTL
	sent := s.sinceBase()
	lease, err := meta.GrantLease(ctx, s.etcd, ttl)
	if err != nil {
		return err
	}
	s.leaseMu.Lock()
	s.pastLeases[lease] = true
	s.leaseMu.Unlock()
	if err := s.releaseAssignments(ctx, lease); err != nil {
		s.revoke(lease)
		return err
	}
	// A new lease, a new shared log: the old one's tablets were closed
	// and are someone else's now; their next owners read it.
	if err := s.openLog(lease); err != nil {
		s.revoke(lease)
		return err
	}
	rec := meta.ServerRecord{ID: s.id, Address: s.addr, StartTime: time.Now().UnixMicro(), Lease: lease}
	if err := meta.RegisterServer(ctx, s.etcd, s.layout, rec); err != nil {
		s.revoke(lease)
		return err
	}
	s.leaseMu.Lock()
	s.leaseID.Store(lease)
	s.fenced, s.abandoned = false, false
	s.safeUntil.Store(int64(sent + ttl - s.leaseMargin()))
	s.leaseMu.Unlock()
	s.logger.Info("registered", "id", s.id, "address", s.addr, "lease", lease)
	return nil
}

// releaseAssignments marks every tablet etcd assigns to this server id
// under another lease than lease as unassigned, so the master gives it out
// again: a server that (re)registers holds no tablets (its previous
// incarnation's were dropped by abandon, or died with the process), and they
// must not wait for the old lease to expire. This is the owner's own
// confirmation that it stopped serving them.
//
// Only assignments under a lease this process held (and dropped with it),
// or under a lease that no longer exists, are released: a record under
// another live lease belongs to another incarnation of this id that may
// still serve it (a process paused, then replaced by a new one started
// under the same id); the master hands those on once that lease expires.
func (s *Server) releaseAssignments(ctx context.Context, lease int64) error {
	recs, _, _, err := meta.ReadServerTablets(ctx, s.etcd, s.layout, s.id, s.opts.EtcdPageSize)
	if err != nil {
		return err
	}
	gone := map[int64]bool{}
	for _, rec := range recs {
		if err := s.releaseFromOldLease(ctx, rec, lease, gone); err != nil {
			return err
		}
	}
	return nil
}

// releaseFromOldLease marks rec unassigned if it is this process's to release. A
// conflict is decided once more on the record read again: a mirror whose
// record an older binary rewrote (a cluster upgraded in place) carries a
// stale ModRevision. A second conflict leaves the tablet to the master.
func (s *Server) releaseFromOldLease(ctx context.Context, rec meta.VersionedTablet, lease int64, gone map[int64]bool) error {
	for try := 0; ; try++ {
		ok, err := s.releasable(ctx, rec.TabletRecord, lease, gone)
		if err != nil || !ok {
			return err
		}
		_, err = meta.Update(ctx, s.etcd, s.layout, rec, meta.Unassigned(rec.TabletRecord))
		if !errors.Is(err, meta.ErrConflict) || try > 0 {
			if errors.Is(err, meta.ErrConflict) {
				return nil
			}
			return err
		}
		if rec, err = meta.GetTablet(ctx, s.etcd, s.layout, rec.Table, rec.ID); err != nil {
			if errors.Is(err, meta.ErrNotFound) {
				return nil
			}
			return err
		}
	}
}

// releasable says whether rec, assigned to this server's id, is this
// process's to release now that it registers under lease (gone caches
// which leases etcd no longer has).
func (s *Server) releasable(ctx context.Context, rec meta.TabletRecord, lease int64, gone map[int64]bool) (bool, error) {
	if rec.Server != s.id || rec.Lease == lease {
		return false, nil
	}
	s.leaseMu.Lock()
	mine := s.pastLeases[rec.Lease]
	s.leaseMu.Unlock()
	if mine || rec.Lease == 0 {
		return true, nil
	}
	g, ok := gone[rec.Lease]
	if !ok {
		// TTL 0 is under a second left, not gone (meta.LeaseGone).
		var err error
		if g, err = meta.LeaseGone(ctx, s.etcd, rec.Lease); err != nil {
			return false, err
		}
		gone[rec.Lease] = g
	}
	if !g {
		s.logger.Info("leaving a tablet of another live registration of this id to the master", "table", rec.Table, "tablet", rec.ID, "lease", rec.Lease)
	}
	return g, nil
}

// renew renews lease id once (meta.RenewLease); on success the lease is
// safe until the send time plus the TTL (minus the margin), unless the
// server moved to another lease meanwhile. A paused server whose lease is
// renewed resumes serving.
func (s *Server) renew(ctx context.Context, id int64) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.LeaseTTL-s.leaseMargin())
	defer cancel()
	sent := s.sinceBase()
	if err := meta.RenewLease(ctx, s.etcd, id); err != nil {
		return err
	}
	next := int64(sent + s.opts.LeaseTTL - s.leaseMargin())
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if hook := s.opts.testHookRenewed; hook != nil {
		defer func() { hook(time.Duration(s.safeUntil.Load())) }()
	}
	if s.leaseID.Load() != id || s.abandoned {
		return nil
	}
	if next > s.safeUntil.Load() && next > int64(s.sinceBase()) {
		s.safeUntil.Store(next)
		if s.fenced {
			s.fenced = false
			s.logger.Warn("lease renewed after a pause: serving again", "lease", id)
		}
	}
	return nil
}

// revoke releases a lease (and the keys bound to it), best effort.
func (s *Server) revoke(id int64) {
	if id == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LeaseTTL/2)
	defer cancel()
	if err := meta.RevokeLease(ctx, s.etcd, id); err != nil {
		s.logger.Debug("revoking lease", "lease", id, "err", err)
	}
}

// leaseLoop renews the lease, pauses when renewals stop succeeding in time,
// abandons the tablets when etcd says the lease is gone, and registers
// again after that. It runs until ctx is done. Renewals run in their own
// goroutines (owned by the loop) so a slow one neither delays the pause
// check nor the next renewal; after a failed renewal the next one is sent
// at the next tick instead of TTL/3 later, so a short etcd outage costs
// little more than its length.
func (s *Server) leaseLoop(ctx context.Context) {
	ttl := s.opts.LeaseTTL
	tick := max(ttl/20, 10*time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	var renewals sync.WaitGroup
	defer renewals.Wait()
	lost := make(chan int64, 1)
	var failing atomic.Bool
	var inflight atomic.Int32
	lastRenew := s.sinceBase()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-lost:
			if s.leaseID.Load() == id {
				s.abandon("etcd says the lease is gone")
			}
			continue
		case <-ticker.C:
		}
		paused := s.opts.PauseRenewals()
		if s.isAbandoned() {
			if paused {
				continue
			}
			s.revoke(s.leaseID.Swap(0))
			if err := s.register(ctx); err != nil {
				s.logger.Warn("registering again", "err", err)
				continue
			}
			lastRenew = s.sinceBase()
			continue
		}
		if !s.leaseSafe() {
			s.pause("lease not renewed in time")
		}
		due := ttl / 3
		if failing.Load() || s.isPaused() {
			due = tick
		}
		// At most a few renewals in flight: while etcd is unreachable each
		// waits for its timeout.
		if paused || s.sinceBase()-lastRenew < due || inflight.Load() >= 3 {
			continue
		}
		lastRenew = s.sinceBase()
		id := s.leaseID.Load()
		renewals.Add(1)
		inflight.Add(1)
		go func() {
			defer renewals.Done()
			defer inflight.Add(-1)
			err := s.renew(ctx, id)
			failing.Store(err != nil)
			if ctx.Err() == nil {
				s.counters.renewed(err == nil)
			}
			if err == nil || ctx.Err() != nil {
				return
			}
			s.logger.Debug("renewing lease", "lease", id, "err", err)
			if errors.Is(err, meta.ErrLeaseNotFound) {
				select {
				case lost <- id:
				default:
				}
			}
		}()
	}
}

func (s *Server) isPaused() bool {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.fenced
}

func (s *Server) isAbandoned() bool {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	return s.abandoned
}

// pause stops serving at once, keeping the tablets open: data calls fail
// and the write guard refuses flushes and compactions until a renewal of
// the same lease succeeds.
func (s *Server) pause(reason string) {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	s.safeUntil.Store(0)
	if s.fenced {
		return
	}
	s.fenced = true
	s.fences.Add(1)
	s.logger.Warn("paused: lease not known to be held", "reason", reason, "lease", s.leaseID.Load())
}

// abandon stops serving for good under the current lease: every tablet is
// dropped and closed without flushing (several at once, as Close does),
// and nothing is written to them again. Tablets being loaded or split
// notice the new generation and do not install themselves. The lease loop
// then registers under a new lease.
func (s *Server) abandon(reason string) {
	s.leaseMu.Lock()
	s.safeUntil.Store(0)
	if !s.fenced {
		s.fences.Add(1)
	}
	s.fenced, s.abandoned = true, true
	s.leaseMu.Unlock()
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.mu.Lock()
	hs := s.tablets
	s.tablets = make(map[string]*held)
	s.gen.Add(1)
	s.mu.Unlock()
	s.loads.reset() // the next registration owns nothing
	eachTablet(hs, func(h *held) {
		if err := h.t.Close(); err != nil {
			s.logger.Warn("closing abandoned tablet", "table", h.table, "tablet", h.id, "err", err)
		}
	})
	s.logger.Warn("lease lost: dropped every tablet", "reason", reason, "tablets", len(hs))
}
