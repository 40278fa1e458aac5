package master

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/metrics"
)

// A master's /metrics has every documented master series, and they move
// with what the master does: assignments, a split, balancer moves, the
// failover of a dead server's tablets, merges counted by CountMerge.
func TestMetricsOfAMaster(t *testing.T) {
	c := newCluster(t)
	reg := metrics.NewRegistry()
	m := c.startMaster(Options{Metrics: reg})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	scrape := func() metrics.Families {
		t.Helper()
		fs, err := metrics.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	val := func(name string, match map[string]string) float64 {
		t.Helper()
		v, ok := scrape().Sum(name, match)
		if !ok {
			t.Fatalf("%s is not exported", name)
		}
		return v
	}
	checkDocumented(t, scrape())
	if v := val("tabula_master_leader", nil); v != 1 {
		t.Fatalf("leader = %v, want 1", v)
	}
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	if _, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "t", RowKey: []byte("f")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 3, s1)
	waitFor(t, 5*time.Second, func() (bool, string) {
		v := val("tabula_master_splits_observed_total", nil)
		return v == 1, fmt.Sprintf("splits observed %v, want 1", v)
	})
	s2 := c.startServer("s2")
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	bal, err := mc.Balance(ctx, &tabulapb.BalanceRequest{})
	if err != nil || bal.Moved == 0 {
		t.Fatalf("Balance = %v, %v; want moves", bal, err)
	}
	waitAllLoaded(t, c, "t", 3, s1, s2)
	if v := val("tabula_master_moves_total", nil); v != float64(bal.Moved) {
		t.Errorf("moves = %v, want %d", v, bal.Moved)
	}
	assignedBefore := val("tabula_master_assignments_total", nil)
	if assignedBefore < 2 || val("tabula_master_failovers_total", nil) != 0 {
		t.Errorf("before any failure: assignments %v (want >= 2), failovers %v (want 0)", assignedBefore, val("tabula_master_failovers_total", nil))
	}
	waitFor(t, 5*time.Second, func() (bool, string) {
		v := val("tabula_master_servers_live", nil)
		return v == 2, fmt.Sprintf("servers live %v, want 2", v)
	})

	s2.die()
	waitAllLoaded(t, c, "t", 3, s1)
	if v := val("tabula_master_failovers_total", nil); v != float64(bal.Moved) {
		t.Errorf("failovers = %v, want %d (the tablets the dead server held)", v, bal.Moved)
	}
	if v := val("tabula_master_assignments_total", nil); v != assignedBefore+float64(bal.Moved) {
		t.Errorf("assignments = %v, want %v", v, assignedBefore+float64(bal.Moved))
	}
	m.CountMerge()
	fs := scrape()
	checkDocumented(t, fs)
	for name, want := range map[string]float64{
		"tabula_master_merges_total": 1,
		"tabula_master_tables":       1,
		"tabula_master_tablets":      3,
	} {
		if v, _ := fs.Sum(name, nil); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	if v, _ := fs.Sum("tabula_grpc_server_handled_total", map[string]string{"service": "tabula.v1.Master", "method": "CreateTable", "code": "OK"}); v != 1 {
		t.Errorf("CreateTable calls = %v, want 1", v)
	}
	if v, _ := fs.Sum("tabula_grpc_server_handled_total", map[string]string{"service": "tabula.v1.Master", "method": "Balance", "code": "OK"}); v != 1 {
		t.Errorf("Balance calls = %v, want 1", v)
	}
	m.Close()
	if left := scrape().Tabula(); len(left) != 0 {
		t.Errorf("still exported after Close: %v", left)
	}
}

// checkDocumented fails for every tabula_ family of fs that
// docs/OPERATIONS.md does not list with its type.
func checkDocumented(t *testing.T, fs metrics.Families) {
	t.Helper()
	f, err := os.Open("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := metrics.Documented(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range fs.Tabula() {
		if want, ok := doc[name]; !ok {
			t.Errorf("%s is exported but not documented in docs/OPERATIONS.md", name)
		} else if got := metrics.TypeName(fs[name]); got != want {
			t.Errorf("%s is a %s, documented as a %s", name, got, want)
		}
	}
}
