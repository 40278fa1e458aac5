package tabletserver

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestServerStatsDeltaReports: a caller that acknowledges the last report
// gets only what changed; a stale acknowledgement gets everything again.
func TestServerStatsDeltaReports(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	left := e.load(c, e.assign("left", nil, []byte("m"), srv, 1))
	right := e.load(c, e.assign("right", []byte("m"), nil, srv, 1))
	start := time.Now()
	srv.rollLoad(start)

	ask := func(prev *tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse {
		t.Helper()
		req := &tabulapb.ServerStatsRequest{Delta: true}
		if prev != nil {
			req.AckSeq, req.AckIncarnation = prev.ReportSeq, prev.Incarnation
		}
		st, err := c.ServerStats(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	ids := func(st *tabulapb.ServerStatsResponse) (out []string) {
		for _, ts := range st.Tablets {
			out = append(out, ts.Tablet.TabletId)
		}
		return out
	}

	first := ask(nil)
	if first.Delta || len(first.Tablets) != 2 || first.TabletCount != 2 || first.ReportSeq == 0 || first.Incarnation == 0 {
		t.Fatalf("first report: delta %v, tablets %v, count %d, seq %d", first.Delta, ids(first), first.TabletCount, first.ReportSeq)
	}
	idle := ask(first)
	if !idle.Delta || len(idle.Tablets) != 0 || len(idle.Removed) != 0 || idle.TabletCount != 2 {
		t.Fatalf("nothing changed: delta %v, tablets %v, removed %v, count %d", idle.Delta, ids(idle), idle.Removed, idle.TabletCount)
	}

	for i := range 50 {
		if err := put(e.ctx, c, left, fmt.Sprintf("a%03d", i), set("cf", "q", 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	srv.rollLoad(start.Add(10 * time.Second)) // left: 5 writes/s, right: still 0
	busy := ask(idle)
	if !busy.Delta || !slices.Equal(ids(busy), []string{"left"}) || busy.Tablets[0].WritesPerSec != 5 {
		t.Fatalf("after writes to left: delta %v, tablets %v", busy.Delta, ids(busy))
	}

	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: right}); err != nil {
		t.Fatal(err)
	}
	gone := ask(busy)
	if !gone.Delta || len(gone.Removed) != 1 || gone.Removed[0].TabletId != "right" || gone.TabletCount != 1 {
		t.Fatalf("after unloading right: delta %v, tablets %v, removed %v, count %d", gone.Delta, ids(gone), gone.Removed, gone.TabletCount)
	}

	// An acknowledgement of an older report (an answer lost, another
	// caller in between) gets a full report.
	full := ask(busy)
	if full.Delta || !slices.Equal(ids(full), []string{"left"}) {
		t.Fatalf("stale ack: delta %v, tablets %v", full.Delta, ids(full))
	}
	// A caller without delta (tabula top, the status page) gets everything
	// and costs the next delta caller one full report.
	if _, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{}); err != nil {
		t.Fatal(err)
	}
	if st := ask(full); st.Delta {
		t.Fatal("a report in between: delta answered against a state the caller does not hold")
	}
}

// TestDeltaReportThresholds: a small drift waits for the refresh, adds up
// until it crosses the threshold, and a change of the tablet itself is
// sent at once.
func TestDeltaReportThresholds(t *testing.T) {
	var r loadReporter
	stats := func(size int64, rps float64, epoch int64) []*tabulapb.TabletStats {
		return []*tabulapb.TabletStats{{Tablet: &tabulapb.TabletRef{Table: "t", TabletId: "a", Epoch: epoch}, SizeBytes: size, ReadsPerSec: rps}}
	}
	var prev *tabulapb.ServerStatsResponse
	report := func(cur []*tabulapb.TabletStats) int {
		req := &tabulapb.ServerStatsRequest{Delta: true}
		if prev != nil {
			req.AckSeq, req.AckIncarnation = prev.ReportSeq, prev.Incarnation
		}
		resp := &tabulapb.ServerStatsResponse{}
		r.fill(req, resp, cur)
		prev = resp
		return len(resp.Tablets)
	}
	const mib = 1 << 20
	if n := report(stats(100*mib, 10, 1)); n != 1 {
		t.Fatalf("full report: %d tablets", n)
	}
	// +5 % size and rate: below 10 % of the larger value; then +12 % of
	// what was sent, in two steps of which neither alone is 10 %.
	if n := report(stats(105*mib, 10.5, 1)); n != 0 {
		t.Fatal("a 5 % drift was sent at once")
	}
	if n := report(stats(112*mib, 11.2, 1)); n != 1 {
		t.Fatal("a drift adding up to 12 % of the sent value was not sent")
	}
	// A tiny change is sent by the refresh, deltaRefreshReports reports
	// after the tablet was last sent, not before.
	for i := 1; i < deltaRefreshReports; i++ {
		if n := report(stats(112*mib+1, 11.2, 1)); n != 0 {
			t.Fatalf("a 1-byte change was sent %d reports after the last send", i)
		}
	}
	if n := report(stats(112*mib+1, 11.2, 1)); n != 1 {
		t.Fatalf("a 1-byte change was not refreshed after %d reports", deltaRefreshReports)
	}
	// Unchanged: never sent again.
	for range 2 * deltaRefreshReports {
		if n := report(stats(112*mib+1, 11.2, 1)); n != 0 {
			t.Fatal("an unchanged tablet was sent")
		}
	}
	if n := report(stats(112*mib+1, 11.2, 2)); n != 1 {
		t.Fatal("a new epoch was not sent at once")
	}
	// Near zero the floor holds: 0 -> 0.1 req/s waits, 0 -> 1 req/s goes.
	if n := report(stats(int64(110.25*mib)+1, 0, 2)); n != 1 {
		t.Fatal("11 -> 0 req/s was not sent")
	}
	if n := report(stats(int64(110.25*mib)+1, 0.1, 2)); n != 0 {
		t.Fatal("0 -> 0.1 req/s was sent at once")
	}
	if n := report(stats(int64(110.25*mib)+1, 1, 2)); n != 1 {
		t.Fatal("0 -> 1 req/s was not sent")
	}
}
