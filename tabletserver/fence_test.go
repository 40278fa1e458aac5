package tabletserver

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

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
	r := &renewals{}
	srv := e.startWithRenewals(r, func(o *Options) { o.PauseRenewals = r.isPaused })
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
	r.resume()
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
	r := &renewals{extraTTL: 60}
	srv := e.startWithRenewals(r, func(o *Options) { o.PauseRenewals = r.isPaused })
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
	r.resume()
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
	e.putRecord(rec)
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
	e.load(e.dial(srv), e.assign("t1", nil, nil, srv, 1))
	srv.mu.RLock()
	h := srv.tablets[tabletKey("users", "t1")]
	srv.mu.RUnlock()
	if err := srv.ackFor(h, nil); err != nil {
		t.Fatalf("acknowledge with a safe lease = %v", err)
	}
	srv.safeUntil.Store(0) // as if the process slept past its lease
	err := srv.ackFor(h, nil)
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
