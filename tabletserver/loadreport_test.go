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
	// A caller without delta (a server's status page) gets everything and
	// leaves the delta caller's state alone.
	all, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if all.Delta || len(all.Tablets) != 1 || all.ReportSeq != 0 {
		t.Fatalf("a request without delta: delta %v, tablets %v, seq %d", all.Delta, ids(all), all.ReportSeq)
	}
	if st := ask(full); !st.Delta || len(st.Tablets) != 0 {
		t.Fatalf("after a request without delta: delta %v, tablets %v; want an empty delta", st.Delta, ids(st))
	}
}
