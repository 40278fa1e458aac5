package tabletserver

import (
	"errors"
	"testing"
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
