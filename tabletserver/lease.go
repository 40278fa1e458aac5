package tabletserver

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// Self-fencing (DESIGN.md §4). The server renews its lease itself with
// KeepAliveOnce every TTL/3 and remembers when each successful renewal was
// SENT: etcd cannot expire the lease before sendTime+TTL. The server serves
// only while now < lastSuccessfulSend + TTL - margin (margin = TTL/4); every
// data call checks that bound against the monotonic clock, so requests stop
// at the deadline even if the renewal loop is stuck. When the bound passes,
// the loop fences: it drops and closes every tablet WITHOUT flushing (the
// next owner replays their logs), then registers again under a new lease.

// sinceBase returns the monotonic time since the server's base instant.
func (s *Server) sinceBase() time.Duration { return time.Since(s.base) }

// leaseSafe reports whether the server may serve: its lease cannot have
// expired at etcd yet (with a margin).
func (s *Server) leaseSafe() bool {
	return s.sinceBase() < time.Duration(s.safeUntil.Load())
}

// acknowledge turns the result of a write that succeeded into
// ErrOutcomeUnknown when the lease is no longer safe. A process paused
// (SIGSTOP, a long GC or swap) between the check before the write and its
// answer may wake after another server has taken the tablet and replayed
// its log; acknowledging then would let two owners acknowledge writes. The
// write was durable before this check, so if the check passes, the lease
// was still held when it became durable and the next owner's replay has it.
func (s *Server) acknowledge(err error) error {
	if err == nil && !s.leaseSafe() {
		return ErrOutcomeUnknown
	}
	return err
}

func (s *Server) leaseMargin() time.Duration { return s.opts.LeaseTTL / 4 }

// register grants a new lease, releases the tablets etcd still assigns to
// this server's id (a newly registered server holds none), and puts
// servers/<id> under the lease.
func (s *Server) register(ctx context.Context) error {
	ttl := s.opts.LeaseTTL
	sent := s.sinceBase()
	// Round up: etcd then keeps the lease at least as long as we assume.
	g, err := s.etcd.Grant(ctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return err
	}
	if err := s.releaseAssignments(ctx); err != nil {
		s.revoke(g.ID)
		return err
	}
	rec := meta.ServerRecord{ID: s.id, Address: s.addr, StartTime: time.Now().UnixMicro()}
	if _, err := s.etcd.Put(ctx, s.layout.ServerKey(s.id), meta.EncodeServer(rec), clientv3.WithLease(g.ID)); err != nil {
		s.revoke(g.ID)
		return err
	}
	s.leaseMu.Lock()
	s.leaseID.Store(int64(g.ID))
	s.fenced = false
	s.safeUntil.Store(int64(sent + ttl - s.leaseMargin()))
	s.leaseMu.Unlock()
	s.logger.Info("registered", "id", s.id, "address", s.addr, "lease", int64(g.ID))
	return nil
}

// releaseAssignments marks every tablet etcd assigns to this server id as
// unassigned, so the master gives it out again: a server that (re)registers
// holds no tablets, and its previous incarnation's tablets must not wait for
// a load that will never come.
func (s *Server) releaseAssignments(ctx context.Context) error {
	resp, err := s.etcd.Get(ctx, s.layout.AllTabletsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		rec, err := meta.DecodeTablet(kv.Value)
		if err != nil || rec.Server != s.id {
			continue
		}
		next := rec
		next.State, next.Server, next.Address = meta.StateUnassigned, "", ""
		_, err = meta.Update(ctx, s.etcd, s.layout, meta.VersionedTablet{TabletRecord: rec, ModRevision: kv.ModRevision}, next)
		if err != nil && !errors.Is(err, meta.ErrConflict) {
			return err
		}
	}
	return nil
}

// renew sends one KeepAliveOnce for lease id; on success the lease is safe
// until the send time plus the TTL (minus the margin), unless the server
// fenced or moved to another lease meanwhile.
func (s *Server) renew(ctx context.Context, id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.LeaseTTL-s.leaseMargin())
	defer cancel()
	sent := s.sinceBase()
	resp, err := s.etcd.KeepAliveOnce(ctx, id)
	if err != nil {
		return err
	}
	if resp.TTL <= 0 {
		return rpctypes.ErrLeaseNotFound
	}
	next := int64(sent + s.opts.LeaseTTL - s.leaseMargin())
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if !s.fenced && clientv3.LeaseID(s.leaseID.Load()) == id && next > s.safeUntil.Load() {
		s.safeUntil.Store(next)
	}
	return nil
}

// revoke releases a lease (and the keys bound to it), best effort.
func (s *Server) revoke(id clientv3.LeaseID) {
	if id == clientv3.NoLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.LeaseTTL/2)
	defer cancel()
	if _, err := s.etcd.Revoke(ctx, id); err != nil {
		s.logger.Debug("revoking lease", "lease", int64(id), "err", err)
	}
}

// leaseLoop renews the lease, fences when renewals stop succeeding in
// time, and registers again after a fence. It runs until ctx is done.
// Renewals run in their own goroutines (owned by the loop) so a slow one
// neither delays the fence check nor the next renewal.
func (s *Server) leaseLoop(ctx context.Context) {
	ttl := s.opts.LeaseTTL
	ticker := time.NewTicker(max(ttl/20, 10*time.Millisecond))
	defer ticker.Stop()
	var renewals sync.WaitGroup
	defer renewals.Wait()
	lost := make(chan struct{}, 1)
	lastRenew := s.sinceBase()
	fenced := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-lost:
			if !fenced {
				s.fence("lease lost")
				fenced = true
			}
			continue
		case <-ticker.C:
		}
		paused := s.opts.PauseRenewals()
		if fenced {
			if paused {
				continue
			}
			s.revoke(clientv3.LeaseID(s.leaseID.Swap(0)))
			if err := s.register(ctx); err != nil {
				s.logger.Warn("registering again after a fence", "err", err)
				continue
			}
			fenced = false
			lastRenew = s.sinceBase()
			continue
		}
		if !s.leaseSafe() {
			s.fence("lease not renewed in time")
			fenced = true
			continue
		}
		if paused || s.sinceBase()-lastRenew < ttl/3 {
			continue
		}
		lastRenew = s.sinceBase()
		id := clientv3.LeaseID(s.leaseID.Load())
		renewals.Add(1)
		go func() {
			defer renewals.Done()
			err := s.renew(ctx, id)
			if err == nil || ctx.Err() != nil {
				return
			}
			s.logger.Warn("renewing lease", "lease", int64(id), "err", err)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				select {
				case lost <- struct{}{}:
				default:
				}
			}
		}()
	}
}

// fence stops serving at once: data calls fail from now on, and every
// tablet is dropped and closed without flushing; nothing is written to
// them again. Tablets being loaded or split notice the new generation and
// do not install themselves.
func (s *Server) fence(reason string) {
	s.leaseMu.Lock()
	s.fenced = true
	s.safeUntil.Store(0)
	s.leaseMu.Unlock()
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.mu.Lock()
	hs := s.tablets
	s.tablets = make(map[string]*held)
	s.gen++
	s.mu.Unlock()
	for _, h := range hs {
		if err := h.t.Close(); err != nil {
			s.logger.Warn("closing fenced tablet", "table", h.table, "tablet", h.id, "err", err)
		}
	}
	s.fences.Add(1)
	s.logger.Warn("fenced: stopped serving", "reason", reason, "tablets", len(hs))
}
