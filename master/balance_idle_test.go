package master

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestBalancerSkipsIdleRounds: a loop round after one that planned nothing
// is skipped while nothing it depends on changed; a changed load report
// or a write to etcd makes the next round plan, and the round that finds
// moves makes them.
func TestBalancerSkipsIdleRounds(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{BalanceInterval: time.Hour, LoadInterval: time.Hour})
	s1 := c.startServerTTL("s1", 60)
	s2 := c.startServerTTL("s2", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("b", "c", "d")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 4, s1, s2)
	waitConfirmed(t, c, m, "t")
	if got := perServer(c, "t"); got["s1"] != 2 || got["s2"] != 2 {
		t.Fatalf("placement %v, want 2 and 2", got)
	}
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	skipped := func() int64 {
		m.bal.mu.Lock()
		defer m.bal.mu.Unlock()
		return m.bal.skipped
	}
	balanceNow(t, m) // plans nothing: even counts, no load
	if n := skipped(); n != 0 {
		t.Fatalf("the first round was skipped (%d)", n)
	}
	balanceNow(t, m)
	balanceNow(t, m)
	if n := skipped(); n != 2 {
		t.Fatalf("%d idle rounds skipped, want 2", n)
	}
	// The same numbers reported again: still idle.
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	balanceNow(t, m)
	if n := skipped(); n != 3 {
		t.Fatalf("a round after an unchanged report: %d skipped, want 3", n)
	}

	// s1's tablets get hot: the report changes, the round plans a move.
	for _, tb := range c.tablets("t") {
		if tb.Server == "s1" {
			s1.setStats(tb.ID, &tabulapb.TabletStats{ReadsPerSec: 1000})
		}
	}
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	balanceNow(t, m)
	if n := skipped(); n != 3 {
		t.Fatalf("a round after a changed report was skipped")
	}
	st, err := mc.GetBalancer(ctx, &tabulapb.GetBalancerRequest{})
	if err != nil || st.MovesMade == 0 {
		t.Fatalf("a hot server and no move: %v %v", st, err)
	}

	// A server joining (a write to etcd, nothing else) makes the next
	// round plan and move tablets to it.
	waitAllLoaded(t, c, "t", 4, s1, s2)
	waitConfirmed(t, c, m, "t")
	for _, tb := range c.tablets("t") {
		s1.setStats(tb.ID, &tabulapb.TabletStats{})
		s2.setStats(tb.ID, &tabulapb.TabletStats{})
	}
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	// While the move is remembered rounds run; once it is older than the
	// no-return time they are skipped again.
	balanceNow(t, m)
	balanceNow(t, m)
	if n := skipped(); n != 3 {
		t.Fatalf("a round was skipped while a move is remembered")
	}
	m.bal.mu.Lock()
	for k, lm := range m.bal.recent {
		lm.At = lm.At.Add(-m.planConfig().NoReturn - time.Second)
		m.bal.recent[k] = lm
	}
	m.bal.mu.Unlock()
	balanceNow(t, m)
	balanceNow(t, m)
	before := skipped()
	made := st.MovesMade
	if before != 5 {
		t.Fatalf("%d rounds skipped, want 5 (2 more once the move aged)", before)
	}
	c.startServerTTL("s3", 60)
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 3, fmt.Sprint(ss, err)
	})
	balanceNow(t, m)
	if n := skipped(); n != before {
		t.Fatalf("a round after a server joined was skipped")
	}
	if st, _ := mc.GetBalancer(ctx, &tabulapb.GetBalancerRequest{}); st.GetMovesMade() == made {
		t.Fatalf("a server joined and nothing moved to it: %v", st)
	}
}
