package tabletserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// renewals sits between a server and etcd (Options.WrapStore) and records
// the grants and renewals etcd accepted, with the earliest instant etcd may
// expire the lease after them: the instant the call was made (before etcd
// received it) plus the TTL etcd answered. Through Options.testHookRenewed
// it also records the server's serving deadline after each renewal it
// applied. pause stops renewals as an unreachable etcd would: the server
// sends none, and the answer to one already sent is lost on its way back.
// With extraTTL, leases are granted that many seconds longer than the
// server asks for, so etcd keeps the lease well past the server's pause.
type renewals struct {
	meta.Store
	extraTTL int64
	server   *Server // set once Start returned

	// mu protects the fields below.
	mu       sync.Mutex
	paused   bool
	accepted int           // renewals etcd accepted whose answer reached the server
	applied  int           // renewals the server applied to its lease state
	expiry   time.Time     // etcd cannot expire the lease before this
	deadline time.Duration // the latest serving deadline of the server (since its base)
}

// startWithRenewals starts a server whose lease calls go through a new
// renewals, and waits until it has applied a renewal.
func startWithRenewals(e *env, extraTTL int64) (*Server, *renewals) {
	e.t.Helper()
	r := &renewals{extraTTL: extraTTL}
	srv := e.start(func(o *Options) {
		o.WrapStore = func(s meta.Store) meta.Store { r.Store = s; return r }
		o.PauseRenewals = r.isPaused
		o.testHookRenewed = r.renewed
	})
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	eventually(e.t, 10*time.Second, "a lease renewal", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applied > 0
	})
	return srv, r
}

func (r *renewals) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	sent := time.Now()
	resp, err := r.Store.Grant(ctx, ttl+r.extraTTL)
	if err == nil {
		r.mu.Lock()
		r.extend(sent, resp.TTL)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *renewals) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	sent := time.Now()
	resp, err := r.Store.KeepAliveOnce(ctx, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		return nil, errors.New("renewals: answer lost (paused)")
	}
	if err == nil && resp.TTL > 0 {
		r.accepted++
		r.extend(sent, resp.TTL)
	}
	return resp, err
}

// extend records that etcd accepted a grant or renewal sent at sent with
// ttl seconds.
func (r *renewals) extend(sent time.Time, ttl int64) {
	if exp := sent.Add(time.Duration(ttl) * time.Second); exp.After(r.expiry) {
		r.expiry = exp
	}
}

func (r *renewals) renewed(safeUntil time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied++
	r.deadline = max(r.deadline, safeUntil)
}

func (r *renewals) isPaused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

func (r *renewals) setPaused(p bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = p
}

// pause stops renewals and waits until the server has applied every
// renewal that reached it: from then on its serving deadline is final
// (until renewals resume). It returns the deadline as an instant, the
// earliest instant etcd may expire the lease, and how many times the
// server will have fenced once it passes the deadline.
func (r *renewals) pause(t *testing.T) (deadline, expiry time.Time, fences int64) {
	t.Helper()
	r.setPaused(true)
	eventually(t, 10*time.Second, "the server to apply the renewals it received", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applied == r.accepted
	})
	r.mu.Lock()
	srv := r.server
	r.mu.Unlock()
	srv.leaseMu.Lock()
	fences = srv.fences.Load()
	if !srv.fenced {
		fences++ // it fences once it passes the deadline
	}
	srv.leaseMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	return srv.base.Add(r.deadline), r.expiry, fences
}

// TestFenceStopsWritesBeforeTheLeaseExpires stops the server's renewals
// and checks that it stops serving before etcd can expire its lease (so no
// other server can have been given its tablets meanwhile): its own
// deadline comes before the earliest expiry etcd allows, and no write that
// began at or after that expiry is acknowledged. Both are instants the
// server and etcd fixed, so the check does not depend on when the test
// goroutine runs. Once the lease has expired and renewals resume, the
// server registers again under a new lease.
func TestFenceStopsWritesBeforeTheLeaseExpires(t *testing.T) {
	e := newEnv(t)
	srv, r := startWithRenewals(e, 0)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "before", set("cf", "q", 1, "acked")); err != nil {
		t.Fatal(err)
	}
	key := e.layout.ServerKey(srv.ID())
	resp, err := e.cli.Get(e.ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("server key: %v, %v", resp, err)
	}
	oldLease := clientv3.LeaseID(resp.Kvs[0].Lease)

	deadline, expiry, fences := r.pause(t)
	if deadline.After(expiry) {
		t.Fatalf("the server would serve until %s after etcd may expire its lease", deadline.Sub(expiry))
	}
	t.Logf("the server stops serving %s before etcd may expire its lease", expiry.Sub(deadline))
	// Write until refused. A write that began before the deadline and
	// ended after it is refused too, as UNAVAILABLE (outcome unknown);
	// keep going until writes are refused up front.
	var refused error
	for {
		began := time.Now()
		refused = put(e.ctx, c, ref, "during", set("cf", "q", 1, "x"))
		if refused == nil && !began.Before(expiry) {
			t.Fatalf("a write that began %s after etcd could expire the lease was acknowledged", began.Sub(expiry))
		}
		if refused != nil && status.Code(refused) != codes.Unavailable {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantNotServing(t, "write after renewals stopped", refused, "users", "t1")
	if srv.Serving() {
		t.Fatal("Serving() is true after the fence")
	}
	eventually(t, 10*time.Second, "the fence", func() bool { return srv.Fences() == fences })
	_, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	wantNotServing(t, "read while fenced", err, "users", "t1")
	rec := e.tablet("t1")
	if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema}); err == nil {
		t.Fatal("a fenced server loaded a tablet")
	}

	// The lease expires at etcd while renewals are stuck; when they
	// resume, etcd says the lease is gone: the server drops its tablets,
	// registers under a new lease and hands back the tablets etcd still
	// assigned to it under the old one.
	eventually(t, 10*time.Second, "the lease to expire at etcd", func() bool {
		resp, err := e.cli.Get(e.ctx, key)
		return err == nil && len(resp.Kvs) == 0
	})
	r.setPaused(false)
	eventually(t, 10*time.Second, "registration under a new lease", func() bool {
		resp, err := e.cli.Get(e.ctx, key)
		return err == nil && len(resp.Kvs) == 1 && clientv3.LeaseID(resp.Kvs[0].Lease) != oldLease && srv.Serving()
	})
	if rec = e.tablet("t1"); rec.State != meta.StateUnassigned || rec.Server != "" {
		t.Fatalf("tablet after re-registration: %+v, want unassigned", rec.TabletRecord)
	}
	// The master assigns it again: the acknowledged write is there.
	ref2 := e.load(c, e.assign("t1", nil, nil, srv, 2))
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref2})
	if err != nil || len(rows) < 1 || string(rows[0].Key) != "before" {
		t.Fatalf("after reassignment read %v, %v; want the acknowledged row", rowKeys(rows), err)
	}
}

// A server that could not renew for a while (etcd unreachable or
// restarting) pauses; if etcd still has its lease when renewals succeed
// again, nobody can have been given its tablets, so it serves them again
// at the same epoch, without re-registering or replaying.
func TestPausedServerResumesWhenItsLeaseSurvived(t *testing.T) {
	e := newEnv(t)
	// etcd keeps the lease a minute longer than the server counts on (as
	// if someone else kept it alive, as etcd does across a restart).
	srv, r := startWithRenewals(e, 60)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "before", set("cf", "q", 1, "acked")); err != nil {
		t.Fatal(err)
	}
	lease := clientv3.LeaseID(srv.leaseID.Load())
	_, _, fences := r.pause(t)
	eventually(t, 10*time.Second, "the pause", func() bool { return srv.Fences() == fences && !srv.Serving() })
	wantNotServing(t, "write while paused", put(e.ctx, c, ref, "during", set("cf", "q", 1, "x")), "users", "t1")
	// etcd still holds the lease.
	if _, err := e.cli.KeepAliveOnce(e.ctx, lease); err != nil {
		t.Fatal(err)
	}
	r.setPaused(false)
	eventually(t, 10*time.Second, "serving again", srv.Serving)
	if got := clientv3.LeaseID(srv.leaseID.Load()); got != lease {
		t.Fatalf("the server moved to lease %x; want it to keep %x", got, lease)
	}
	if rec := e.tablet("t1"); rec.Epoch != 1 || rec.Server != srv.ID() || rec.Lease != int64(lease) {
		t.Fatalf("tablet after the pause: %+v", rec.TabletRecord)
	}
	if err := put(e.ctx, c, ref, "after", set("cf", "q", 1, "acked")); err != nil {
		t.Fatalf("write after resuming: %v", err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || len(rows) != 2 {
		t.Fatalf("read after resuming: %v, %v; want after and before", rowKeys(rows), err)
	}
}

// A load names an assignment made under a lease; a server that holds
// another lease (it registered again since) refuses it, so a master's stale
// view can never make it serve a tablet the master thinks a dead lease
// owns.
func TestLoadUnderAnotherLeaseIsRefused(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	rec := e.assign("t1", nil, nil, srv, 1)
	rec.Lease++
	if _, err := e.cli.Put(e.ctx, e.layout.TabletKey(rec.Table, rec.ID), meta.EncodeTablet(rec)); err != nil {
		t.Fatal(err)
	}
	_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema})
	if err == nil || !strings.Contains(err.Error(), "lease") {
		t.Fatalf("LoadTablet under another lease: %v, want a refusal naming the lease", err)
	}
}

// An unload is the server's promise not to serve that epoch again: a load
// of it arriving afterwards (sent before the unload, delayed) is refused.
func TestLoadAfterUnloadOfTheSameEpochIsRefused(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	rec := e.assign("t1", nil, nil, srv, 3)
	ref := &tabulapb.TabletRef{Table: rec.Table, TabletId: rec.ID, Epoch: rec.Epoch}
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema}); err == nil {
		t.Fatal("a tablet unloaded at epoch 3 was loaded at epoch 3 again")
	}
	e.load(c, e.assign("t1", nil, nil, srv, 4)) // a new assignment loads
}

func TestLostLeaseFencesAtOnce(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	resp, err := e.cli.Get(e.ctx, e.layout.ServerKey(srv.ID()))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("server key: %v, %v", resp, err)
	}
	// Someone revokes the lease (an operator, or etcd lost it): the next
	// renewal learns it and the server fences.
	if _, err := e.cli.Revoke(e.ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the fence", func() bool { return srv.Fences() >= 1 })
	wantNotServing(t, "write after the lease was lost", put(e.ctx, c, ref, "r", set("cf", "q", 1, "x")), "users", "t1")
	eventually(t, 5*time.Second, "registration again", srv.Serving)
}

// TestWriteFinishingAfterTheLeaseIsNotAcknowledged checks the answer to a
// write whose lease ran out while it was being applied (a process paused
// between its lease check and its answer): not an acknowledgement, and not
// "not serving" either, since the write may be in the log the next owner
// replays; UNAVAILABLE tells clients to retry only idempotent writes.
func TestWriteFinishingAfterTheLeaseIsNotAcknowledged(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	if err := srv.acknowledge(nil); err != nil {
		t.Fatalf("acknowledge with a safe lease = %v", err)
	}
	srv.safeUntil.Store(0) // as if the process slept past its lease
	err := srv.acknowledge(nil)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("acknowledge after the lease = %v, want ErrOutcomeUnknown", err)
	}
	if got := status.Code(toStatus(e.ctx, err, "users", "t1", []byte("r"))); got != codes.Unavailable {
		t.Fatalf("code %v, want Unavailable", got)
	}
	if isNotServing(err) {
		t.Fatal("an unknown outcome must not read as not serving (clients would retry non-idempotent writes)")
	}
}
