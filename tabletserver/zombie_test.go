package tabletserver

import (
	"errors"
	"testing"

	"github.com/tabuladb/tabula/meta"
)

// Found by `tabula verify` under SIGSTOP: a write in flight on a tablet
// held under lease L1 finished after the server had lost L1, dropped its
// tablets and registered under L2; the ack check saw L2 safe and
// acknowledged a write the tablet's next owner never replayed. A call is
// acknowledged (and a read answered) only while the server still owns the
// tablet under the registration it loaded it in.
func TestCallOnATabletOfAnEarlierRegistrationIsNotAcknowledged(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	e.load(c, e.assign("t1", nil, nil, srv, 1))
	srv.mu.RLock()
	h := srv.tablets[tabletKey("users", "t1")]
	srv.mu.RUnlock()
	if err := srv.ackFor(h, nil); err != nil {
		t.Fatalf("a write on an owned tablet: %v, want acknowledged", err)
	}
	// The lease is lost while the call runs; the server drops its tablets
	// and registers again before the call's answer is decided.
	srv.abandon("test: lease lost")
	if err := srv.register(e.ctx); err != nil {
		t.Fatal(err)
	}
	if !srv.leaseSafe() {
		t.Fatal("the new lease is not safe")
	}
	if err := srv.ackFor(h, nil); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a write on a tablet of the earlier registration: %v, want ErrOutcomeUnknown", err)
	}
	if srv.owns(h) {
		t.Fatal("reads of a tablet of the earlier registration would still be answered")
	}
}

// A new process registering under an id whose previous process may still
// be alive (paused, then replaced without being killed) must not release
// that process's tablets while its lease lives: the master would hand
// them on and both would serve. Tablets under a lease that is gone, or
// under one this process held itself, are released at once.
func TestRegisteringReleasesOnlyTabletsNoOtherIncarnationHolds(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	other, err := e.cli.Grant(e.ctx, 60) // the other incarnation's live lease
	if err != nil {
		t.Fatal(err)
	}
	dead, err := e.cli.Grant(e.ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Revoke(e.ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	live := e.assign("live", nil, []byte("m"), srv, 3)
	live.Lease = int64(other.ID)
	gone := e.assign("gone", []byte("m"), nil, srv, 3)
	gone.Lease = int64(dead.ID)
	for _, r := range []meta.TabletRecord{live, gone} {
		e.putRecord(r)
	}
	if err := srv.releaseAssignments(e.ctx, srv.leaseID.Load()); err != nil {
		t.Fatal(err)
	}
	if r := e.tablet("live"); r.State == meta.StateUnassigned || r.Lease != int64(other.ID) {
		t.Fatalf("a tablet of another live registration was released: %+v", r.TabletRecord)
	}
	if r := e.tablet("gone"); r.State != meta.StateUnassigned {
		t.Fatalf("a tablet under a lease that is gone was kept: %+v", r.TabletRecord)
	}
}
