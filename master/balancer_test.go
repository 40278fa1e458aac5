package master

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// balanceNow runs one round of m's balancer loop and waits for it.
func balanceNow(t *testing.T, m *Master) {
	t.Helper()
	m.bal.mu.Lock()
	before := m.bal.rounds
	m.bal.mu.Unlock()
	m.bal.kick <- struct{}{}
	waitFor(t, 10*time.Second, func() (bool, string) {
		m.bal.mu.Lock()
		defer m.bal.mu.Unlock()
		return m.bal.rounds > before, "the balancer round did not finish"
	})
}

// perServer counts the tablets of table by server in etcd.
func perServer(c *cluster, table string) map[string]int {
	out := map[string]int{}
	for _, tb := range c.tablets(table) {
		out[tb.Server]++
	}
	return out
}

// waitConfirmed waits until m's assignment loop has confirmed every tablet
// of table (the balancer moves only those).
func waitConfirmed(t *testing.T, c *cluster, m *Master, table string) {
	t.Helper()
	waitFor(t, 10*time.Second, func() (bool, string) {
		term, err := m.lead(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, tb := range c.tablets(table) {
			if !term.assign.loaded(m.layout.TabletKey(table, tb.ID), tb.Epoch) {
				return false, "tablet " + tb.ID + " not confirmed"
			}
		}
		return true, ""
	})
}

// createOn creates table with n tablets while s is the only server.
func createOn(t *testing.T, c *cluster, m *Master, mc tabulapb.MasterClient, table string, n int, s *fakeServer) {
	t.Helper()
	var splits []string
	for i := 1; i < n; i++ {
		splits = append(splits, fmt.Sprintf("%c", 'a'+i))
	}
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema(table, "cf"), SplitKeys: keys(splits...)}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, table, n, s)
	waitConfirmed(t, c, m, table)
}

// logBuffer collects a master's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestBalancerLoopGivesAJoiningServerTablets: 6 tablets on s1, s2 joins,
// one loop round moves 3 to it, each logged at info with event=move and its
// reason; GetBalancer reports the moves; the next round moves nothing.
func TestBalancerLoopGivesAJoiningServerTablets(t *testing.T) {
	c := newCluster(t)
	logs := &logBuffer{}
	m := c.startMaster(Options{BalanceInterval: time.Hour, LoadInterval: -1,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	createOn(t, c, m, mc, "t", 6, s1)
	s2 := c.startServer("s2")
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(context.Background(), &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	balanceNow(t, m)
	waitAllLoaded(t, c, "t", 6, s1, s2)
	if got := perServer(c, "t"); got["s1"] != 3 || got["s2"] != 3 {
		t.Fatalf("after a round: %v, want 3 and 3", got)
	}
	st, err := mc.GetBalancer(context.Background(), &tabulapb.GetBalancerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Enabled || st.MovesMade != 3 || len(st.RecentMoves) != 3 || st.LastRoundMicros == 0 || st.IntervalMillis != time.Hour.Milliseconds() {
		t.Fatalf("GetBalancer = %v", st)
	}
	for _, mv := range st.RecentMoves {
		if mv.Move.FromServer != "s1" || mv.Move.ToServer != "s2" || !strings.Contains(mv.Move.Reason, "cost") {
			t.Errorf("recent move %v", mv)
		}
	}
	lines := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "event=move") {
			lines++
			if !strings.Contains(l, "level=INFO") || !strings.Contains(l, "reason=") || !strings.Contains(l, "spread_before=") || !strings.Contains(l, "cost_to_after=") {
				t.Errorf("move log line lacks level, reason or costs: %s", l)
			}
		}
	}
	if lines != 3 {
		t.Errorf("%d move log lines, want 3:\n%s", lines, logs)
	}
	waitConfirmed(t, c, m, "t")
	balanceNow(t, m)
	if st, _ := mc.GetBalancer(context.Background(), &tabulapb.GetBalancerRequest{}); st.GetMovesMade() != 3 {
		t.Fatalf("a balanced cluster moved again: %v", st)
	}
}

// TestBalancerSwitchSurvivesANewLeader: with the cluster switch off the
// loop moves nothing, also under a new leader; switched on, it balances.
func TestBalancerSwitchSurvivesANewLeader(t *testing.T) {
	c := newCluster(t)
	m1 := c.startMaster(Options{BalanceInterval: time.Hour, LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m1)
	mc := c.dial(m1.Addr())
	ctx := context.Background()
	createOn(t, c, m1, mc, "t", 4, s1)
	if _, err := mc.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Enabled: false}); err != nil {
		t.Fatal(err)
	}
	m2 := c.startMaster(Options{BalanceInterval: time.Hour, LoadInterval: -1})
	c.startServer("s2")
	balanceNow(t, m1)
	if got := perServer(c, "t"); got["s1"] != 4 {
		t.Fatalf("the switched-off balancer moved tablets: %v", got)
	}
	m1.Close()
	c.waitLeader(m2)
	waitConfirmed(t, c, m2, "t")
	balanceNow(t, m2)
	if got := perServer(c, "t"); got["s1"] != 4 {
		t.Fatalf("the new leader's balancer moved tablets although switched off: %v", got)
	}
	mc2 := c.dial(m2.Addr())
	st, err := mc2.GetBalancer(ctx, &tabulapb.GetBalancerRequest{})
	if err != nil || st.Enabled {
		t.Fatalf("GetBalancer on the new leader = %v, %v; want off", st, err)
	}
	if _, err := mc2.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	balanceNow(t, m2)
	if got := perServer(c, "t"); got["s1"] != 2 || got["s2"] != 2 {
		t.Fatalf("switched on: %v, want 2 and 2", got)
	}
}

// TestBalancerTableSwitchAndDryRun: a table switched off keeps its tablets
// on their server (the switch is in its schema); a dry run plans without
// moving; a dead server's tablets of that table are still reassigned.
func TestBalancerTableSwitchAndDryRun(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	createOn(t, c, m, mc, "fixed", 4, s1)
	createOn(t, c, m, mc, "free", 4, s1)
	if _, err := mc.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Table: "fixed", Enabled: false}); err != nil {
		t.Fatal(err)
	}
	_, err := mc.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Table: "nope", Enabled: false})
	testkit.WantCode(t, "", err, codes.NotFound, "nope")
	d, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "fixed"})
	if err != nil || !d.Schema.BalancerDisabled {
		t.Fatalf("DescribeTable(fixed) = %v, %v; want balancer_disabled", d, err)
	}
	st, err := mc.GetBalancer(ctx, &tabulapb.GetBalancerRequest{})
	if err != nil || len(st.DisabledTables) != 1 || st.DisabledTables[0] != "fixed" {
		t.Fatalf("GetBalancer = %v, %v", st, err)
	}
	s2 := c.startServerTTL("s2", 60)
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	dry, err := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true})
	if err != nil || dry.Moved != 0 || len(dry.Moves) == 0 {
		t.Fatalf("dry run = %v, %v; want a plan and no move", dry, err)
	}
	for _, mv := range dry.Moves {
		if mv.Table != "free" || mv.FromServer != "s1" || mv.ToServer != "s2" || mv.Reason == "" {
			t.Errorf("planned %v", mv)
		}
	}
	if got := perServer(c, "free"); got["s1"] != 4 {
		t.Fatalf("the dry run moved tablets: %v", got)
	}
	bal, err := mc.Balance(ctx, &tabulapb.BalanceRequest{})
	if err != nil || int(bal.Moved) != len(dry.Moves) {
		t.Fatalf("Balance = %v, %v; want the %d planned moves", bal, err, len(dry.Moves))
	}
	waitAllLoaded(t, c, "free", 4, s1, s2)
	if got := perServer(c, "fixed"); got["s1"] != 4 {
		t.Fatalf("the switched-off table moved: %v", got)
	}
	if got := perServer(c, "free"); got["s2"] != 4 {
		// 8 tablets, 4 of them fixed on s1: all 4 free ones go to s2.
		t.Fatalf("free table after Balance: %v, want all 4 on s2", got)
	}
	// Reassignment is not balancing: s1 dies, its fixed tablets go to s2.
	s1.die()
	waitAllLoaded(t, c, "fixed", 4, s2)
}

// TestMoveTablet moves a tablet by hand, checks its errors, and that the
// balancer does not move it back within the cooldown.
func TestMoveTablet(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	createOn(t, c, m, mc, "t", 2, s1)
	s2 := c.startServerTTL("s2", 60)
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	ts := c.tablets("t")
	_, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: ts[0].ID, ServerId: "s9"})
	testkit.WantCode(t, "", err, codes.NotFound, "s9")
	_, err = mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: "nope", ServerId: "s2"})
	testkit.WantCode(t, "", err, codes.NotFound, "nope")
	_, err = mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", ServerId: "s2"})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "tablet_id")
	resp, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: ts[0].ID, ServerId: "s2"})
	if err != nil || resp.Tablet.ServerId != "s2" || resp.Tablet.Epoch != ts[0].Epoch+1 {
		t.Fatalf("MoveTablet = %v, %v", resp, err)
	}
	waitAllLoaded(t, c, "t", 2, s1, s2)
	// Already there: nothing happens.
	if again, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: ts[0].ID, ServerId: "s2"}); err != nil || again.Tablet.Epoch != resp.Tablet.Epoch {
		t.Fatalf("MoveTablet to where it is = %v, %v", again, err)
	}
	// Put both on s2 by hand: the balancer would move one back to s1,
	// but the one just moved is cooling down and the other left s1.
	if _, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: ts[1].ID, ServerId: "s2"}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s2)
	waitConfirmed(t, c, m, "t")
	if b, err := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true}); err != nil || len(b.Moves) != 0 {
		t.Fatalf("Balance plans %v, %v right after operator moves", b, err)
	}
	st, _ := mc.GetBalancer(ctx, &tabulapb.GetBalancerRequest{})
	if st.GetMovesMade() != 2 || st.RecentMoves[0].Move.Reason != "operator" {
		t.Fatalf("GetBalancer = %v", st)
	}
}

// TestBalancerUsesLoadReports: two servers with two tablets each, one
// server's tablets hot in the load report: the plan moves a hot tablet
// to the cold server.
func TestBalancerUsesLoadReports(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: time.Hour})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	createOn(t, c, m, mc, "t", 4, s1)
	s2 := c.startServerTTL("s2", 60)
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	ts := c.tablets("t")
	for _, id := range []string{ts[2].ID, ts[3].ID} {
		if _, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: "t", TabletId: id, ServerId: "s2"}); err != nil {
			t.Fatal(err)
		}
	}
	waitAllLoaded(t, c, "t", 4, s1, s2)
	waitConfirmed(t, c, m, "t")
	if b, _ := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true}); len(b.GetMoves()) != 0 {
		t.Fatalf("even counts and no load: planned %v", b.Moves)
	}
	s1.setStats(ts[0].ID, &tabulapb.TabletStats{ReadsPerSec: 900})
	s1.setStats(ts[1].ID, &tabulapb.TabletStats{WritesPerSec: 1000})
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true})
	if err != nil || len(b.Moves) != 1 || b.Moves[0].FromServer != "s1" || b.Moves[0].ToServer != "s2" ||
		(b.Moves[0].TabletId != ts[0].ID && b.Moves[0].TabletId != ts[1].ID) {
		t.Fatalf("with s1 hot, planned %v, %v; want one hot tablet to s2", b, err)
	}
}

// TestBalancerLeavesTabletsBeingLoaded: tablets whose load on their server
// is not confirmed yet are not moved; once loaded they are.
func TestBalancerLeavesTabletsBeingLoaded(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1, LoadTimeout: time.Minute})
	s1 := c.startServerTTL("s1", 60)
	s1.loadGate = make(chan struct{})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return s1.loadsStarted.Load() >= 2, "loads not started"
	})
	c.startServerTTL("s2", 60)
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	if b, err := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true}); err != nil || len(b.Moves) != 0 {
		t.Fatalf("planned %v, %v while the tablets are loading", b, err)
	}
	close(s1.loadGate)
	waitConfirmed(t, c, m, "t")
	if b, err := mc.Balance(ctx, &tabulapb.BalanceRequest{DryRun: true}); err != nil || len(b.Moves) != 1 {
		t.Fatalf("planned %v, %v once loaded; want 1 move", b, err)
	}
}
