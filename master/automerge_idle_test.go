package master

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestAutoMergeSkipsIdleRounds: with the default load source, a round
// after one that found no pair small and cold enough is skipped while
// neither etcd nor the load report changed; once a pair is small and cold
// only time keeps it apart, so rounds run until it merges.
func TestAutoMergeSkipsIdleRounds(t *testing.T) {
	c := newCluster(t)
	s1 := c.startServerTTL("s1", 60)
	clock := &mergeClock{now: time.Unix(1_000_000, 0)}
	m := c.startMaster(Options{LoadInterval: time.Hour, Merge: MergeOptions{Interval: time.Hour, Now: clock.Now,
		Window: 10 * time.Minute, SplitCooldown: 30 * time.Minute}})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	s := schema("t", "a")
	s.SplitThresholdBytes = 1 << 20 // pairs under 256 KiB merge
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: s}); err != nil {
		t.Fatal(err)
	}
	loadedEverywhere(c, "t", s1)
	serverSplit(t, c, s1, "t", "m")
	loadedEverywhere(c, "t", s1)
	term, err := m.lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sizes := func(n int64) {
		t.Helper()
		for _, tb := range c.tablets("t") {
			s1.setStats(tb.ID, &tabulapb.TabletStats{SizeBytes: n})
		}
		if _, err := m.collectLoad(ctx); err != nil {
			t.Fatal(err)
		}
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
	skipped := func() int64 {
		m.mergeWatch.mu.Lock()
		defer m.mergeWatch.mu.Unlock()
		return m.mergeWatch.skipped
	}

	sizes(10 << 20) // too big to merge
	round(0)
	if skipped() != 0 {
		t.Fatal("the first round was skipped")
	}
	round(time.Minute)
	sizes(10 << 20) // the same report again
	round(time.Minute)
	if n := skipped(); n != 2 {
		t.Fatalf("%d idle rounds skipped, want 2", n)
	}

	sizes(10 << 10) // small and cold: they merge once quiet 10 min and seen 30 min
	if n := round(0); n != 0 {
		t.Fatal("merged at once")
	}
	if n := round(time.Minute); n != 0 || skipped() != 2 {
		t.Fatalf("a round with a pair waiting for its window: merged %d, skipped %d (want 0, 2)", n, skipped())
	}
	if n := round(31 * time.Minute); n != 1 {
		t.Fatalf("a pair small and cold for 32 minutes: merged %d, want 1", n)
	}
}
