package locator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
)

func TestLocateCachesTheAnswer(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "m", "s1:1", 1), tablet("b", "m", "", "s2:1", 1))
	l := newLocator(t, m.Addr())
	ctx := context.Background()
	for _, c := range []struct{ row, id string }{{"a", "a"}, {"b", "a"}, {"m", "b"}, {"zz", "b"}, {"a", "a"}} {
		got, err := l.Locate(ctx, "t", []byte(c.row))
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != c.id || got.Table != "t" {
			t.Errorf("Locate(%q) = %s, want tablet %s", c.row, got.ID, c.id)
		}
	}
	if n := m.Lookups(); n != 2 {
		t.Errorf("master got %d locates, want 2 (one per tablet)", n)
	}
}

func TestConcurrentMissesShareOneLookup(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	gate := make(chan struct{})
	m.SetGate(gate)
	l := newLocator(t, m.Addr())

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab, err := l.Locate(context.Background(), "t", []byte("row"))
			if err == nil && tab.ID != "a" {
				err = errors.New("wrong tablet " + tab.ID)
			}
			errs <- err
		}()
	}
	<-m.Arrived()                     // the one lookup is at the master
	time.Sleep(50 * time.Millisecond) // let the others pile up behind it
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if c := m.Lookups(); c != 1 {
		t.Errorf("%d concurrent misses sent %d lookups, want 1", n, c)
	}
}

func TestOneCallerGivingUpDoesNotFailTheOthers(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	gate := make(chan struct{})
	m.SetGate(gate)
	l := newLocator(t, m.Addr())

	ctx1, cancel1 := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := l.Locate(ctx1, "t", []byte("r")); first <- err }()
	<-m.Arrived()
	second := make(chan error, 1)
	go func() { _, err := l.Locate(context.Background(), "t", []byte("r")); second <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel1()
	if err := <-first; status.Code(err) != codes.Canceled {
		t.Errorf("cancelled caller got %v, want Canceled", err)
	}
	<-m.Arrived() // the second caller now leads its own lookup
	close(gate)
	if err := <-second; err != nil {
		t.Errorf("second caller failed with the first one's cancellation: %v", err)
	}
}

func TestInvalidateEvictsOnlyTheStaleEntry(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	l := newLocator(t, m.Addr())
	ctx := context.Background()
	old, err := l.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	// The tablet moves; the cache does not know yet.
	m.SetTablets("t", tablet("a", "", "", "s2:1", 2))
	if got, _ := l.Locate(ctx, "t", []byte("r")); got.Address != "s1:1" {
		t.Fatalf("cache should still say s1, says %s", got.Address)
	}
	// s1 answers "not serving": evict and re-locate.
	if !l.Invalidate(old) {
		t.Fatal("Invalidate of the cached entry evicted nothing")
	}
	fresh, err := l.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Address != "s2:1" || fresh.Epoch != 2 {
		t.Fatalf("after eviction got %+v, want s2 at epoch 2", fresh)
	}
	// A late NotServing for the old location must not evict the fresh one.
	if l.Invalidate(old) {
		t.Error("Invalidate of a stale epoch evicted the fresh entry")
	}
	if _, ok := l.Cached("t", []byte("r")); !ok {
		t.Error("fresh entry gone")
	}
	calls := m.Lookups()
	l.Evict("t", "a")
	if _, ok := l.Cached("t", []byte("r")); ok {
		t.Error("Evict left the entry")
	}
	l.Locate(ctx, "t", []byte("r"))
	l.EvictRow("t", []byte("zz"))
	if _, ok := l.Cached("t", []byte("r")); ok {
		t.Error("EvictRow left the entry")
	}
	if m.Lookups() != calls+1 {
		t.Errorf("master calls %d, want %d", m.Lookups(), calls+1)
	}
}

func TestSplitChildrenReplaceTheParent(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("p", "", "", "s1:1", 1))
	l := newLocator(t, m.Addr())
	ctx := context.Background()
	parent, err := l.Locate(ctx, "t", []byte("c"))
	if err != nil {
		t.Fatal(err)
	}
	m.SetTablets("t", tablet("l", "", "m", "s1:1", 2), tablet("r", "m", "", "s1:1", 2))
	// A read of "x" hits the parent and gets NotServing; re-locating stores
	// the right child, which overlaps the parent and pushes it out.
	l.Invalidate(parent)
	right, err := l.Locate(ctx, "t", []byte("x"))
	if err != nil || right.ID != "r" {
		t.Fatalf("Locate(x) = %+v, %v", right, err)
	}
	if _, ok := l.Cached("t", []byte("c")); ok {
		t.Error("parent still cached for row c")
	}
	got, err := l.LocateRange(ctx, "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "l" || got[1].ID != "r" {
		t.Fatalf("LocateRange = %+v", got)
	}
	calls := m.Lookups()
	if got, err := l.LocateRange(ctx, "t", []byte("a"), []byte("z")); err != nil || len(got) != 2 {
		t.Fatalf("cached LocateRange = %+v, %v", got, err)
	}
	if got, err := l.LocateRange(ctx, "t", []byte("a"), []byte("b")); err != nil || len(got) != 1 || got[0].ID != "l" {
		t.Fatalf("cached LocateRange [a,b) = %+v, %v", got, err)
	}
	if m.Lookups() != calls {
		t.Error("LocateRange asked the master although the cache covers the range")
	}
	// Inserting the parent again (a stale answer) replaces both children.
	stale := TabletFromProto(tablet("p", "", "", "s1:1", 1))
	stale.Table = "t"
	l.Insert(stale)
	if c := l.cache.len("t"); c != 1 {
		t.Errorf("cache holds %d tablets after inserting the parent, want 1", c)
	}
}

func TestMasterFailover(t *testing.T) {
	standby := fakemaster.Start(t)
	standby.SetUnavailable(true)
	leader := fakemaster.Start(t)
	leader.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	// First address: nothing listens. Second: a standby saying UNAVAILABLE.
	l := newLocator(t, deadAddress(t), standby.Addr(), leader.Addr())
	got, err := l.Locate(context.Background(), "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "a" {
		t.Errorf("got %+v", got)
	}
	// The next lookup starts with the master that answered.
	l.EvictTable("t")
	before := standby.Lookups()
	if _, err := l.Locate(context.Background(), "t", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if standby.Lookups() != before {
		t.Error("second lookup asked the standby again instead of the last good master")
	}
}

func TestAllMastersDownIsUnavailable(t *testing.T) {
	l, err := New([]string{deadAddress(t), deadAddress(t)}, Options{Attempts: 2, Backoff: Backoff{Initial: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Locate(context.Background(), "t", []byte("r"))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("err = %v, want UNAVAILABLE", err)
	}
}

func TestUnknownTableIsNotRetried(t *testing.T) {
	m := fakemaster.Start(t)
	l := newLocator(t, m.Addr())
	_, err := l.Locate(context.Background(), "nope", []byte("r"))
	if status.Code(err) != codes.NotFound {
		t.Errorf("err = %v, want NOT_FOUND", err)
	}
	if m.Lookups() != 1 {
		t.Errorf("master got %d calls, want 1", m.Lookups())
	}
}

func TestUnassignedTabletIsRetriedThenReported(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "", 0))
	l, err := New([]string{m.Addr()}, Options{Attempts: 3, Backoff: Backoff{Initial: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = l.Locate(context.Background(), "t", []byte("r"))
	if !errors.Is(err, ErrUnassigned) {
		t.Fatalf("err = %v, want ErrUnassigned", err)
	}
	if m.Lookups() != 3 {
		t.Errorf("master got %d calls, want 3 attempts", m.Lookups())
	}
	if _, ok := l.Cached("t", []byte("r")); ok {
		t.Error("unassigned tablet cached")
	}
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	if got, err := l.Locate(context.Background(), "t", []byte("r")); err != nil || got.Address != "s1:1" {
		t.Errorf("after assignment: %+v, %v", got, err)
	}
}

func TestBackoffDelayGrowsWithinBounds(t *testing.T) {
	b := Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for attempt, bound := range []time.Duration{10, 20, 40, 80, 80, 80} {
		bound *= time.Millisecond
		for i := 0; i < 50; i++ {
			d := b.Delay(attempt)
			if d < bound/2 || d > bound {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", attempt, d, bound/2, bound)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Backoff{Initial: time.Hour}).Wait(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context = %v", err)
	}
}
