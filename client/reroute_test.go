package client

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/locator"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// waitLimit bounds the waits of these tests for something that must
// happen; it is a failure bound, never a pace the tests depend on.
const waitLimit = 10 * time.Second

// manualTimers stands in for the timers of location checks and of
// attempts: they fire only when the test says so.
type manualTimers struct {
	// mu protects the fields below.
	mu      sync.Mutex
	armed   []*manualTimer
	arms    int           // timers armed so far
	changed chan struct{} // closed and replaced whenever a timer is armed
}

// manualTimer is one timer of manualTimers; like a *time.Timer of
// time.AfterFunc, it can be stopped and reset, and firing disarms it.
type manualTimer struct {
	m *manualTimers
	f func()
}

func newManualTimers() *manualTimers { return &manualTimers{changed: make(chan struct{})} }

func (m *manualTimers) afterFunc(_ time.Duration, f func()) func() bool {
	return m.timer(0, f).Stop
}

// timer arms a timer running f when fired (Client.attemptTimer).
func (m *manualTimers) timer(_ time.Duration, f func()) timer {
	mt := &manualTimer{m: m, f: f}
	mt.Reset(0)
	return mt
}

// Stop disarms the timer; it reports whether it was armed.
func (mt *manualTimer) Stop() bool {
	m := mt.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.armed {
		if x == mt {
			m.armed = append(m.armed[:i:i], m.armed[i+1:]...)
			return true
		}
	}
	return false
}

// Reset arms the timer again (the duration is ignored); it reports
// whether it was armed.
func (mt *manualTimer) Reset(time.Duration) bool {
	was := mt.Stop()
	m := mt.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed = append(m.armed, mt)
	m.arms++
	close(m.changed)
	m.changed = make(chan struct{})
	return was
}

// count returns how many timers have been armed so far.
func (m *manualTimers) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.arms
}

// await waits until cond (called with mu held) holds.
func (m *manualTimers) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.After(waitLimit)
	for {
		m.mu.Lock()
		ok, changed := cond(), m.changed
		m.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-limit:
			t.Fatalf("no %s within %v", what, waitLimit)
		}
	}
}

// fire waits for an armed timer and fires every armed one, each in its
// own goroutine as time.AfterFunc would (the check's stop waits for it).
// It returns how many timers had been armed when it took them, so that a
// caller can wait for the ones the fired checks arm next: a stream's first
// check is armed when the client starts waiting for a message, which may
// be after the server already holds the call.
func (m *manualTimers) fire(t *testing.T) (armed int) {
	t.Helper()
	var fired []*manualTimer
	m.await(t, "armed timer", func() bool {
		fired, m.armed = m.armed, nil
		armed = m.arms
		return len(fired) > 0
	})
	for _, mt := range fired {
		go mt.f()
	}
	return armed
}

// pausedCluster is two fake tablet servers and a client; table "t" has
// one tablet, on hung, and the client's location checks fire only when
// the test fires them.
type pausedCluster struct {
	c           *cluster
	hung, other *fakeServer
	cl          *Client
	tbl         *Table
	timers      *manualTimers
}

func newPausedCluster(t *testing.T) *pausedCluster {
	t.Helper()
	c := newCluster(t, 2)
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()},
		AttemptTimeout: -1, // only a location check can free a call from the hung server
		Backoff:        locatorBackoff(time.Millisecond),
		Locator:        locator.Options{RelocateInterval: -1}, // every check asks the master
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	timers := newManualTimers()
	cl.afterFunc = timers.afterFunc
	p := &pausedCluster{c: c, cl: cl, tbl: cl.Open("t"), timers: timers}
	p.hung = c.servers[c.master.Tablets("t")[0].ServerAddress]
	for _, s := range c.servers {
		if s != p.hung {
			p.other = s
		}
	}
	return p
}

// pause makes the hung server hold every call until release (or the end
// of the test).
func (p *pausedCluster) pause(t *testing.T) (release func()) {
	hang := make(chan struct{})
	p.hung.mu.Lock()
	p.hung.hang = hang
	p.hung.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(hang) }) }
	t.Cleanup(release)
	return release
}

// waitHung waits until the hung server holds a call.
func (p *pausedCluster) waitHung(t *testing.T) {
	t.Helper()
	select {
	case <-p.hung.hungCalls:
	case <-time.After(waitLimit):
		t.Fatalf("no call reached the hung server within %v", waitLimit)
	}
}

func waitDone(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("%s still waiting after %v", what, waitLimit)
		return nil
	}
}

// TestIdempotentCallOnHungServerFollowsTheTabletToItsNewOwner plays a
// paused tablet server whose tablet the master gives to another server:
// the idempotent calls already sent to it go to the new owner once a
// location check sees the move, not after AttemptTimeout (disabled here,
// so nothing else could free them). While the tablet has not moved, a
// check sends nothing anywhere: there is no other owner to hedge to.
func TestIdempotentCallOnHungServerFollowsTheTabletToItsNewOwner(t *testing.T) {
	cases := []struct {
		name   string
		method string // the fake server method the call uses
		call   func(ctx context.Context, tbl *Table) error
	}{
		{"ReadRow", "ReadRows", func(ctx context.Context, tbl *Table) error {
			row, err := tbl.ReadRow(ctx, []byte("r"), WithFilter(rowfilter.Family("cf")))
			if err == nil && (len(row.Cells) != 1 || string(row.Cells[0].Value) != "vr") {
				t.Errorf("ReadRow = %+v, want the cell written before", row)
			}
			return err
		}},
		{"ReadRows", "ReadRows", func(ctx context.Context, tbl *Table) error {
			it := tbl.ReadRows(ctx, nil)
			defer it.Close()
			var ks []string
			for it.Next() {
				ks = append(ks, string(it.Row().Key))
			}
			if it.Err() == nil && strings.Join(ks, "") != "ar" {
				t.Errorf("ReadRows = %q, want a r", ks)
			}
			return it.Err()
		}},
		{"Apply with explicit timestamps", "MutateRow", func(ctx context.Context, tbl *Table) error {
			return tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("n"), 7, []byte("new")))
		}},
		{"ApplyBulk with explicit timestamps", "MutateRows", func(ctx context.Context, tbl *Table) error {
			return firstError(tbl.ApplyBulk(ctx, [][]byte{[]byte("a"), []byte("r")},
				[]*Mutation{NewMutation().Set("cf", []byte("n"), 7, []byte("x")), NewMutation().Set("cf", []byte("n"), 7, []byte("y"))}))
		}},
		{"SampleRowKeys", "SampleRowKeys", func(ctx context.Context, tbl *Table) error {
			ks, err := tbl.SampleRowKeys(ctx)
			if err == nil && (len(ks) != 1 || string(ks[0].Key) != "tab") {
				t.Errorf("SampleRowKeys = %+v, want the one tablet's sample", ks)
			}
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPausedCluster(t)
			fill(t, p.tbl, []string{"a", "r"})
			p.pause(t)
			lookups := p.cl.loc.Lookups()
			done := make(chan error, 1)
			go func() { done <- tc.call(context.Background(), p.tbl) }()
			p.waitHung(t)

			// The tablet has not moved: the check asks a master and the
			// call keeps waiting, sent nowhere else.
			arms := p.timers.fire(t)
			p.timers.await(t, "next location check after an unchanged answer", func() bool { return p.timers.arms > arms })
			if n := p.cl.loc.Lookups() - lookups; n != 1 {
				t.Errorf("the check sent %d lookups, want 1", n)
			}
			select {
			case err := <-done:
				t.Fatalf("the call returned (%v) while its server hung and the tablet stayed", err)
			default:
			}
			if n := p.other.callCount(tc.method); n != 0 {
				t.Errorf("an unmoved tablet's call reached the other server %d times, want 0", n)
			}

			// The master moves the tablet: the next check re-routes.
			p.c.move("r", p.other.addr)
			p.timers.fire(t)
			if err := waitDone(t, "the call", done); err != nil {
				t.Fatalf("%s after the tablet moved = %v, want success at the new owner", tc.name, err)
			}
			if n := p.other.callCount(tc.method); n != 1 {
				t.Errorf("the new owner got %d %s calls, want 1", n, tc.method)
			}
			if n := p.hung.callCount("hung"); n != 1 {
				t.Errorf("the hung server got %d calls, want 1 (never re-sent there)", n)
			}
			if tab, ok := p.cl.loc.Cached("t", []byte("r")); !ok || tab.Address != p.other.addr {
				t.Errorf("cached location after the re-route = %+v, %v; want the new owner", tab, ok)
			}
		})
	}
}

// TestScanStalledMidStreamResumesAtTheNewOwner: a server goes silent
// after two rows of a scan and its tablet moves; the scan resumes at the
// new owner after the last row it returned.
func TestScanStalledMidStreamResumesAtTheNewOwner(t *testing.T) {
	p := newPausedCluster(t)
	fill(t, p.tbl, []string{"a", "b", "c", "d", "e", "f"})
	p.hung.mu.Lock()
	p.hung.stallAfter = 2 // send a, b, then go silent
	p.hung.mu.Unlock()
	it := p.tbl.ReadRows(context.Background(), nil)
	defer it.Close()
	for _, want := range []string{"a", "b"} {
		if !it.Next() || string(it.Row().Key) != want {
			t.Fatalf("row %s: %v", want, it.Err())
		}
	}
	rest := make(chan []string, 1)
	go func() {
		var got []string
		for it.Next() {
			got = append(got, string(it.Row().Key))
		}
		rest <- got
	}()
	p.c.move("a", p.other.addr)
	p.timers.fire(t)
	select {
	case got := <-rest:
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "") != "cdef" {
			t.Errorf("rows after the re-route = %q, want c d e f", got)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the scan still stalled %v after the tablet moved", waitLimit)
	}
	if n := p.hung.callCount("ReadRows"); n != 1 {
		t.Errorf("the silent server got %d ReadRows, want 1", n)
	}
	if n := p.other.callCount("ReadRows"); n != 1 {
		t.Errorf("the new owner got %d ReadRows, want 1", n)
	}
}

// TestNonIdempotentCallOnHungServerIsNotSentTwice: a call that is not
// safe to apply twice stays with the hung server even when its tablet
// moves (no location check is even armed); it goes to the new owner only
// after the old one refused it (a NotServing refusal is never applied).
func TestNonIdempotentCallOnHungServerIsNotSentTwice(t *testing.T) {
	cases := []struct {
		name   string
		method string
		call   func(ctx context.Context, tbl *Table) error
	}{
		{"Apply with ServerTime", "MutateRow", func(ctx context.Context, tbl *Table) error {
			return tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), ServerTime, []byte("v")))
		}},
		{"ApplyBulk with ServerTime", "MutateRows", func(ctx context.Context, tbl *Table) error {
			return firstError(tbl.ApplyBulk(ctx, [][]byte{[]byte("r")},
				[]*Mutation{NewMutation().Set("cf", []byte("q"), ServerTime, []byte("v"))}))
		}},
		{"CheckAndMutate", "CheckAndMutateRow", func(ctx context.Context, tbl *Table) error {
			_, err := tbl.CheckAndMutate(ctx, []byte("r"), nil, nil, NewMutation().Set("cf", []byte("q"), 1, []byte("v")))
			return err
		}},
		{"ReadModifyWrite", "ReadModifyWriteRow", func(ctx context.Context, tbl *Table) error {
			_, err := tbl.ReadModifyWrite(ctx, []byte("r"), NewReadModifyWrite().Increment("cf", []byte("n"), 1))
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPausedCluster(t)
			release := p.pause(t)
			done := make(chan error, 1)
			go func() { done <- tc.call(context.Background(), p.tbl) }()
			p.waitHung(t)
			p.c.move("r", p.other.addr)
			// A check would have been armed before the call was sent.
			if n := p.timers.count(); n != 0 {
				t.Fatalf("%d location checks armed for a non-idempotent call, want 0", n)
			}
			if n := p.other.callCount(tc.method); n != 0 {
				t.Fatalf("the new owner got the call %d times while the old one held it, want 0", n)
			}
			release()
			if err := waitDone(t, "the call", done); err != nil {
				t.Fatalf("%s after the old owner refused = %v, want success at the new owner", tc.name, err)
			}
			if n := p.hung.callCount(tc.method); n != 1 {
				t.Errorf("the old owner got %d calls, want 1", n)
			}
			if n := p.other.callCount(tc.method); n != 1 {
				t.Errorf("the new owner got %d calls, want 1", n)
			}
			if n := p.timers.count(); n != 0 {
				t.Errorf("%d location checks armed, want 0", n)
			}
		})
	}
}

// TestRerouteErrorIsUnavailable: the error of an abandoned attempt, when
// it is the last one a caller sees, reads as UNAVAILABLE naming the move.
func TestRerouteErrorIsUnavailable(t *testing.T) {
	err := rerouted(locator.Tablet{Table: "t", ID: "x", Address: "a:1", Epoch: 3})
	if status.Code(err) != codes.Unavailable || !isReroute(err) || !strings.Contains(err.Error(), "moved") {
		t.Errorf("rerouted = %v (code %v), want an UNAVAILABLE reroute naming the move", err, status.Code(err))
	}
}

// firstError returns err or else the first row error of an ApplyBulk.
func firstError(errs []error, err error) error {
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// TestApplyBulkSendsIdempotentRowsApart: ApplyBulk puts rows that are not
// safe to send twice in requests of their own, so that the requests of
// the others can be re-routed.
func TestApplyBulkSendsIdempotentRowsApart(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	var s *fakeServer
	for _, s = range c.servers {
	}
	rows := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
	muts := []*Mutation{
		NewMutation().Set("cf", []byte("q"), 1, []byte("1")),
		NewMutation().Set("cf", []byte("q"), ServerTime, []byte("2")),
		NewMutation().Set("cf", []byte("q"), 1, []byte("3")),
	}
	if err := firstError(tbl.ApplyBulk(context.Background(), rows, muts)); err != nil {
		t.Fatal(err)
	}
	if n := s.callCount("MutateRows"); n != 2 {
		t.Errorf("MutateRows calls = %d, want 2 (idempotent rows apart from the other)", n)
	}
	for i, r := range rows {
		if cells := c.servers[s.addr].store.read(r); len(cells) != 1 || string(cells[0].Value) != string(rune('1'+i)) {
			t.Errorf("row %s = %+v", r, cells)
		}
	}
}

// TestScanAbandonedJustAfterAMessageResumes: a check may abandon a stream
// just as its message arrives; the next wait then finds the stream
// cancelled and must resume at the new owner, not fail with CANCELED.
func TestScanAbandonedJustAfterAMessageResumes(t *testing.T) {
	p := newPausedCluster(t)
	fill(t, p.tbl, []string{"a", "b", "c", "d", "e", "f"})
	p.hung.mu.Lock()
	p.hung.stallAfter = 4 // the stream stays open after a, b, c, d
	p.hung.mu.Unlock()
	it := p.tbl.ReadRows(context.Background(), nil)
	defer it.Close()
	if !it.Next() || string(it.Row().Key) != "a" {
		t.Fatalf("first row: %v", it.Err())
	}
	p.c.move("a", p.other.addr)
	it.streamCancel(errMoved) // as a check finding the move would
	var got []string
	for it.Next() {
		got = append(got, string(it.Row().Key))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scan after the late abandon: %v", err)
	}
	if strings.Join(got, "") != "bcdef" {
		t.Errorf("rows after the late abandon = %q, want b c d e f", got)
	}
}
