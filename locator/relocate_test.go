package locator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
)

// frozenLocator returns a Locator whose RelocateInterval clock stands
// still until the test moves it with the returned function.
func frozenLocator(t *testing.T, addr string, opts Options) (*Locator, func(time.Duration)) {
	t.Helper()
	l, err := New([]string{addr}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	l.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	return l, func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
}

func TestRelocateBypassesTheCacheAndCachesTheNewOwner(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	l, _ := frozenLocator(t, m.Addr(), Options{})
	ctx := context.Background()
	stale, err := l.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	m.SetTablets("t", tablet("a", "", "", "s2:1", 2)) // moved; the cache does not know
	if got, _ := l.Locate(ctx, "t", []byte("r")); got.Address != "s1:1" {
		t.Fatalf("Locate before Relocate = %s, want the cached s1:1", got.Address)
	}
	got, err := l.Relocate(ctx, stale, []byte("r"))
	if err != nil || got.Address != "s2:1" || got.Epoch != 2 {
		t.Fatalf("Relocate = %+v, %v; want s2:1 at epoch 2", got, err)
	}
	if c, ok := l.Cached("t", []byte("r")); !ok || c.Address != "s2:1" {
		t.Errorf("cache after Relocate = %+v, %v; want s2:1", c, ok)
	}
	// Another caller still holding the stale location learns the new one
	// from the cache, without asking the master.
	before := m.Lookups()
	if got, err := l.Relocate(ctx, stale, []byte("q")); err != nil || got.Address != "s2:1" {
		t.Errorf("second Relocate = %+v, %v; want s2:1", got, err)
	}
	if n := m.Lookups() - before; n != 0 {
		t.Errorf("second Relocate of a tablet already relocated sent %d lookups, want 0", n)
	}
}

func TestRelocateOfAnUnmovedTabletAsksOncePerInterval(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	const interval = time.Second
	l, advance := frozenLocator(t, m.Addr(), Options{RelocateInterval: interval})
	ctx := context.Background()
	stale, err := l.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	base := m.Lookups()

	// Many callers waiting on the same silent server: one lookup.
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := l.Relocate(ctx, stale, []byte{'a' + byte(i)})
			if err == nil && !got.sameLocation(stale) {
				err = errors.New("relocated an unmoved tablet to " + got.Address)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if c := m.Lookups() - base; c != 1 {
		t.Errorf("%d Relocates of one tablet within the interval sent %d lookups, want 1", n, c)
	}

	advance(interval)
	if _, err := l.Relocate(ctx, stale, []byte("r")); err != nil {
		t.Fatal(err)
	}
	if c := m.Lookups() - base; c != 2 {
		t.Errorf("after the interval: %d lookups in all, want 2", c)
	}

	// A negative interval asks every time.
	l2, _ := frozenLocator(t, m.Addr(), Options{RelocateInterval: -1})
	stale2, err := l2.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	base = m.Lookups()
	for i := 0; i < 3; i++ {
		if _, err := l2.Relocate(ctx, stale2, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	if c := m.Lookups() - base; c != 3 {
		t.Errorf("RelocateInterval -1: 3 Relocates sent %d lookups, want 3", c)
	}
}

func TestRelocateAfterASplitAnswersEachRowsChild(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("p", "", "", "s1:1", 1))
	l, _ := frozenLocator(t, m.Addr(), Options{})
	ctx := context.Background()
	stale, err := l.Locate(ctx, "t", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	m.SetTablets("t", tablet("pL", "", "m", "s1:1", 2), tablet("pR", "m", "", "s2:1", 2))
	for _, c := range []struct{ row, id, addr string }{{"a", "pL", "s1:1"}, {"x", "pR", "s2:1"}, {"b", "pL", "s1:1"}} {
		got, err := l.Relocate(ctx, stale, []byte(c.row))
		if err != nil || got.ID != c.id || got.Address != c.addr {
			t.Errorf("Relocate(%q) = %s at %s, %v; want %s at %s", c.row, got.ID, got.Address, err, c.id, c.addr)
		}
	}
}

func TestRelocateReportsAnUnassignedTabletWithoutWaiting(t *testing.T) {
	m := fakemaster.Start(t)
	m.SetTablets("t", tablet("a", "", "", "s1:1", 1))
	// Many Attempts with a long backoff: Relocate must not use them.
	l, _ := frozenLocator(t, m.Addr(), Options{Attempts: 100, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}})
	ctx := context.Background()
	stale, err := l.Locate(ctx, "t", []byte("r"))
	if err != nil {
		t.Fatal(err)
	}
	m.SetTablets("t", tablet("a", "", "", "", 2))
	before := m.Lookups()
	if _, err := l.Relocate(ctx, stale, []byte("r")); !errors.Is(err, ErrUnassigned) {
		t.Fatalf("Relocate of an unassigned tablet = %v, want ErrUnassigned", err)
	}
	if n := m.Lookups() - before; n != 1 {
		t.Errorf("Relocate sent %d lookups, want 1", n)
	}
	if c, ok := l.Cached("t", []byte("r")); ok {
		t.Errorf("the stale location is still cached: %+v", c)
	}
}
