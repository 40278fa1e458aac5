package master

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// mergeClock is an injected clock and load source for the automatic merge.
type mergeClock struct {
	mu   sync.Mutex
	now  time.Time
	rate map[string]float64 // requests/s by table; absent: 0.1
	size int64
}

func (c *mergeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *mergeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *mergeClock) load(table, _ string) (int64, float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rate[table]
	if !ok {
		r = 0.1
	}
	return c.size, r, true
}

// serverSplit splits table's tablet holding row at row the way a tablet
// server's size-based split does: not through the master, so row is no
// user split key.
func serverSplit(t *testing.T, c *cluster, f *fakeServer, table, row string) {
	t.Helper()
	for _, tb := range c.tablets(table) {
		if tb.Contains([]byte(row)) {
			if _, err := f.SplitTablet(context.Background(), &tabulapb.SplitRequest{Tablet: ref(&tb.TabletRecord), RowKey: []byte(row)}); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no tablet of %s holds %s", table, row)
}

func TestAutomaticMergeOfSmallColdTablets(t *testing.T) {
	c := newCluster(t)
	s1 := c.startServer("s1")
	clock := &mergeClock{now: time.Unix(1_000_000, 0), rate: map[string]float64{"hot": 50}, size: 10 << 10}
	m := c.startMaster(Options{Merge: MergeOptions{Interval: time.Hour, Load: clock.load, Now: clock.Now,
		Window: 10 * time.Minute, SplitCooldown: 30 * time.Minute, Cooldown: 20 * time.Minute}})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	create := func(name string, disabled bool, splitKeys ...string) {
		s := schema(name, "a")
		s.SplitThresholdBytes = 1 << 20 // pairs under 256 KiB merge
		s.AutoMergeDisabled = disabled
		if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: s, SplitKeys: keys(splitKeys...)}); err != nil {
			t.Fatal(err)
		}
	}
	create("cold", false)
	create("user", false, "m") // the user asked for a boundary at m
	create("hot", false)
	create("off", true)
	for _, tb := range []string{"cold", "user", "hot", "off"} {
		loadedEverywhere(c, tb, s1)
	}
	for _, tb := range []string{"cold", "hot", "off"} {
		serverSplit(t, c, s1, tb, "m")
	}
	term, err := m.lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	round := func(after time.Duration) int {
		t.Helper()
		clock.advance(after)
		n, err := m.autoMergeRound(ctx, term)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := func(table string) int { return len(c.tablets(table)) }

	if n := round(0); n != 0 {
		t.Fatalf("merged %d pairs at first sight", n)
	}
	if n := round(20 * time.Minute); n != 0 {
		t.Fatalf("merged %d pairs within the split cooldown", n)
	}
	if n := round(11 * time.Minute); n != 1 {
		t.Fatalf("merged %d pairs once small and cold for the window past the cooldown, want 1", n)
	}
	if count("cold") != 1 || count("user") != 2 || count("hot") != 2 || count("off") != 2 {
		t.Fatalf("tablets after the merge: cold %d, user %d, hot %d, off %d; want 1 2 2 2", count("cold"), count("user"), count("hot"), count("off"))
	}
	merged := c.tablets("cold")[0]
	if len(merged.MergedFrom) != 2 || !m.MergedRecently("cold", merged.ID) {
		t.Fatalf("merged tablet %+v; MergedRecently %v", merged.TabletRecord, m.MergedRecently("cold", merged.ID))
	}

	// Split again (by size, on the server): not merged back at once.
	serverSplit(t, c, s1, "cold", "m")
	if n := round(time.Minute); n != 0 {
		t.Fatalf("merged %d pairs right after a split", n)
	}
	if n := round(25 * time.Minute); n != 0 || count("cold") != 2 {
		t.Fatalf("merged %d pairs within the split cooldown; cold has %d tablets", n, count("cold"))
	}
	if m.MergedRecently("cold", merged.ID) {
		t.Fatal("MergedRecently past the cooldown")
	}
	// The hot table cools down: it merges after a window of quiet.
	clock.mu.Lock()
	clock.rate["hot"] = 0.2
	clock.mu.Unlock()
	if n := round(time.Minute); n != 0 {
		t.Fatalf("merged %d pairs the moment the hot table cooled", n)
	}
	if n := round(10 * time.Minute); n != 1 {
		t.Fatalf("merged %d pairs after the window, want 1 (one per round)", n)
	}
	if n := round(time.Minute); n != 1 {
		t.Fatalf("merged %d pairs in the next round, want 1", n)
	}
	if count("cold") != 1 || count("hot") != 1 || count("user") != 2 || count("off") != 2 {
		t.Fatalf("tablets at the end: cold %d, hot %d, user %d, off %d; want 1 1 2 2", count("cold"), count("hot"), count("user"), count("off"))
	}
	// Too big together: no merge even when cold for long.
	clock.mu.Lock()
	clock.size = 200 << 10
	clock.mu.Unlock()
	serverSplit(t, c, s1, "cold", "m")
	if n := round(time.Hour); n != 0 {
		t.Fatalf("merged %d pairs whose combined size is past a quarter of the threshold", n)
	}
	round(0)
	if n := round(time.Hour); n != 0 {
		t.Fatalf("merged %d pairs whose combined size is past a quarter of the threshold", n)
	}
}
