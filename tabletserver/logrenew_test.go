package tabletserver

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/vfs"
)

// The store's states as the log renewal tests play them.
const (
	storeUp int32 = iota
	storeDown
	storeThrottling
)

// failingLogs fails every operation on the shared logs' folder while
// *state is not storeUp: a plain error while the store is down, one
// marked vfs.ErrSlowDown while it throttles.
func failingLogs(root string, state *atomic.Int32) vfs.Injector {
	logs := filepath.Join(root, "logs") + string(filepath.Separator)
	return func(op vfs.Op, name string) error {
		if !strings.HasPrefix(name, logs) {
			return nil
		}
		switch state.Load() {
		case storeDown:
			return vfs.Failf("%s %s: connection refused", op, name)
		case storeThrottling:
			return fmt.Errorf("%w: %w: %s %s", vfs.ErrSlowDown, vfs.ErrInjected, op, name)
		}
		return nil
	}
}

// currentLog returns the name and health of the server's shared log.
func currentLog(s *Server) (string, error) {
	s.walMu.Lock()
	defer s.walMu.Unlock()
	if s.wal == nil {
		return "", nil
	}
	return s.wal.Name(), s.wal.Err()
}

// logFailure is a server whose shared log failed because the store went
// down (state) under its tablet t1, loaded at epoch 1 with the row
// "acked" written.
type logFailure struct {
	e      *env
	srv    *Server
	c      tabulapb.TabletServerClient
	failed string // the failed log's name
	state  *atomic.Int32
}

// failSharedLog makes a logFailure; setup runs on the server before the
// failure.
func failSharedLog(t *testing.T, setup func(*Server)) logFailure {
	t.Helper()
	e := newEnv(t)
	disk := vfs.NewFaulty(nil)
	srv := e.start(func(o *Options) { o.FS = disk })
	setup(srv)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "acked", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	f := logFailure{e: e, srv: srv, c: c, state: new(atomic.Int32)}
	f.failed, _ = currentLog(srv)
	f.state.Store(storeDown)
	disk.Set(failingLogs(e.root, f.state))
	testkit.WantCode(t, "a write whose log write failed", put(e.ctx, c, ref, "lost", set("cf", "q", 1, "v")), codes.Unavailable, "")
	return f
}

// testTimer makes the renewal's timer the test's: each wait is sent on
// waits and ends when the test sends on tick.
func testTimer(waits chan<- time.Duration, tick <-chan time.Time) func(*Server) {
	return func(srv *Server) {
		srv.logRenew.after = func(d time.Duration) <-chan time.Time {
			waits <- d
			return tick
		}
	}
}

// When the shared log fails and the store comes back, the server starts a
// new log by itself, without waiting for a LoadTablet: the master backs
// off its loads for seconds, and every second without a log is a second
// no tablet of this server can be loaded. Before, the new log was started
// only by the next load.
func TestFailedLogIsReplacedWithoutALoad(t *testing.T) {
	f := failSharedLog(t, func(*Server) {})
	e, srv, c := f.e, f.srv, f.c
	eventually(t, 10*time.Second, "the failed tablet to leave service", func() bool { return srv.Failures() == 1 })
	f.state.Store(storeUp)
	failed := f.failed

	eventually(t, 10*time.Second, "a new shared log without a load", func() bool {
		name, err := currentLog(srv)
		return name != failed && err == nil
	})
	ref := e.load(c, e.assign("t1", nil, nil, srv, 2))
	if err := put(e.ctx, c, ref, "after", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("write on the new log: %v", err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"acked", "after"}) {
		t.Fatalf("the tablet reads %v, %v; want acked and after", rowKeys(rows), err)
	}
}

// The renewal's timer is the test's: while the store is down the server
// tries again after 50, 100, 200, 400 ms (never more than a second apart);
// when the store throttles it waits longer, with jitter, past a second;
// and the first attempt after the store is back starts the new log, with
// no attempt after it.
func TestFailedLogIsReplacedOnTheFirstSuccessfulProbe(t *testing.T) {
	waits, tick := make(chan time.Duration), make(chan time.Time)
	f := failSharedLog(t, testTimer(waits, tick))
	srv, state, failed := f.srv, f.state, f.failed

	next := func(what string) time.Duration {
		t.Helper()
		select {
		case d := <-waits:
			return d
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no attempt to start a new log", what)
			return 0
		}
	}
	for i, want := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if got := next("store down"); got != want {
			t.Errorf("wait %d while the store is down: %v, want %v", i+1, got, want)
		}
		if i == 3 {
			state.Store(storeThrottling) // before the attempt the tick starts
		}
		tick <- time.Time{}
	}
	var slow []time.Duration
	for i := range 3 {
		slow = append(slow, next("store throttling"))
		if i < 2 {
			tick <- time.Time{}
		}
	}
	// Steps of 1 s, 2 s, 4 s, each wait drawn from [step/2, step].
	for i, step := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if slow[i] < step/2 || slow[i] > step {
			t.Errorf("wait %d while the store throttles: %v, want within [%v, %v] (all: %v)", i+1, slow[i], step/2, step, slow)
		}
	}
	// The renewal waits out its seventh wait: the store comes back.
	attempts := srv.renewAttempts()
	if attempts != 7 {
		t.Errorf("%d attempts before the store came back, want 7 (4 down, 3 throttled)", attempts)
	}
	state.Store(storeUp)
	tick <- time.Time{}
	eventually(t, 10*time.Second, "the new log", func() bool {
		name, err := currentLog(srv)
		return name != failed && err == nil
	})
	if got := srv.renewAttempts(); got != attempts+1 {
		t.Errorf("the log was replaced after %d more attempts, want 1: the first after the store is back", got-attempts)
	}
	eventually(t, 10*time.Second, "the renewal to end", func() bool {
		srv.logRenew.mu.Lock()
		defer srv.logRenew.mu.Unlock()
		return !srv.logRenew.running
	})
	select {
	case d := <-waits:
		t.Fatalf("a wait of %v asked for after the new log started", d)
	default:
	}
}

// A load that arrives while the store is down waits for the log's
// renewal instead of failing (into the master's backoff, which grows to
// seconds), and goes ahead on the first attempt that finds the store back.
func TestLoadWaitsForTheLogRenewal(t *testing.T) {
	waits, tick := make(chan time.Duration), make(chan time.Time)
	f := failSharedLog(t, testTimer(waits, tick))
	e, srv, c := f.e, f.srv, f.c
	select {
	case <-waits: // the first attempt failed; the renewal waits for tick
	case <-time.After(10 * time.Second):
		t.Fatal("no attempt to start a new log")
	}
	rec := e.assign("t1", nil, nil, srv, 2)
	errc := make(chan error, 1)
	go func() {
		_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema})
		errc <- err
	}()
	for waiting := false; !waiting; {
		select {
		case err := <-errc:
			t.Fatalf("the load ended while the store was down (%v); want it to wait for the new log", err)
		default:
		}
		srv.logRenew.mu.Lock()
		waiting = srv.logRenew.waiting == 1
		srv.logRenew.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	f.state.Store(storeUp)
	tick <- time.Time{}
	if err := <-errc; err != nil {
		t.Fatalf("the load after the store came back: %v", err)
	}
	ref := &tabulapb.TabletRef{Table: rec.Table, TabletId: rec.ID, Epoch: rec.Epoch}
	if err := put(e.ctx, c, ref, "after", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("write on the new log: %v", err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"acked", "after"}) {
		t.Fatalf("the tablet reads %v, %v; want acked and after", rowKeys(rows), err)
	}
}

func TestRenewBackoff(t *testing.T) {
	none := func(int64) int64 { return 0 }
	most := func(n int64) int64 { return n - 1 }
	for _, tc := range []struct {
		name   string
		slow   bool
		jitter func(int64) int64
		want   []time.Duration // waits
	}{
		{"store down", false, most, []time.Duration{50, 100, 200, 400, 800, 1000, 1000}},
		{"throttled, least jitter", true, none, []time.Duration{500, 1000, 2000, 2000, 2000}},
		{"throttled, most jitter", true, most, []time.Duration{1000, 2000, 4000, 4000, 4000}},
	} {
		var step, wait time.Duration
		var got []time.Duration
		for range tc.want {
			step, wait = renewBackoff(step, tc.slow, tc.jitter)
			got = append(got, wait/time.Millisecond)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: waits %v ms, want %v ms", tc.name, got, tc.want)
		}
	}
}
