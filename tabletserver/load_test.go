package tabletserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestServerStatsReportsLoad drives one load window by hand: writes go to
// the left tablet (90% of them under "a0"), reads to the right one; the
// stats of the closed window must say so, rate by rate, with the access
// quantiles where the writes landed.
func TestServerStatsReportsLoad(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	left := e.load(c, e.assign("left", nil, []byte("m"), srv, 1))
	right := e.load(c, e.assign("right", []byte("m"), nil, srv, 1))
	start := time.Now()
	srv.rollLoad(start) // open a window we control

	for i := range 100 {
		row := fmt.Sprintf("a0%03d", i)
		if i%10 == 0 {
			row = fmt.Sprintf("b%03d", i)
		}
		if err := put(e.ctx, c, left, row, set("cf", "q", 1, "0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	var entries []*tabulapb.MutateRowsRequest_Entry
	for i := range 20 {
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: right, RowKey: fmt.Appendf(nil, "r%02d", i),
			Mutations: []*tabulapb.Mutation{set("cf", "q", 1, "v")}})
	}
	if _, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries}); err != nil {
		t.Fatal(err)
	}
	for range 10 { // point reads
		if _, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: right, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("r01")}}}); err != nil {
			t.Fatal(err)
		}
	}
	// One scan of the whole right tablet: one read, 20 rows of bytes.
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: right})
	if err != nil || len(rows) != 20 {
		t.Fatalf("scan: %d rows, %v", len(rows), err)
	}
	if _, err := c.FlushTablet(e.ctx, left); err != nil {
		t.Fatal(err)
	}
	srv.rollLoad(start.Add(10 * time.Second))

	st, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{KeyQuantiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st.LoadWindowEndMicros != start.Add(10*time.Second).UnixMicro() {
		t.Fatalf("window end %d, want %d", st.LoadWindowEndMicros, start.Add(10*time.Second).UnixMicro())
	}
	byID := map[string]*tabulapb.TabletStats{}
	for _, ts := range st.Tablets {
		byID[ts.Tablet.TabletId] = ts
	}
	l, r := byID["left"], byID["right"]
	if l == nil || r == nil {
		t.Fatalf("stats of %v", st.Tablets)
	}
	if l.WritesPerSec != 10 || l.ReadsPerSec != 0 || l.WriteBytesPerSec != 100*(2+1+10)/10.0 || l.LoadWindowMicros != 10_000_000 {
		t.Fatalf("left: %v w/s %v r/s %v wB/s window %d", l.WritesPerSec, l.ReadsPerSec, l.WriteBytesPerSec, l.LoadWindowMicros)
	}
	if r.WritesPerSec != 2 || r.ReadsPerSec != 1.1 || r.ReadBytesPerSec <= 0 {
		t.Fatalf("right: %v w/s %v r/s %v rB/s", r.WritesPerSec, r.ReadsPerSec, r.ReadBytesPerSec)
	}
	if l.BusyShare <= 0 || r.BusyShare <= 0 {
		t.Fatalf("busy shares %v %v, want > 0", l.BusyShare, r.BusyShare)
	}
	if l.WritesTotal != 100 || r.ReadsTotal != 11 || r.WritesTotal != 20 {
		t.Fatalf("totals: left %d writes, right %d reads %d writes", l.WritesTotal, r.ReadsTotal, r.WritesTotal)
	}
	if len(l.AccessQuantiles) != 3 {
		t.Fatalf("left quantiles %q, want 3", l.AccessQuantiles)
	}
	if q := string(l.AccessQuantiles[1]); q >= "a1" {
		t.Fatalf("left load median %q: 90%% of writes went under a0", q)
	}
	if l.FamilyBytes["cf"] <= 0 {
		t.Fatalf("left family bytes %v, want cf > 0 after a flush", l.FamilyBytes)
	}
	// Without asking, no keys travel.
	st, err = c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range st.Tablets {
		if len(ts.AccessQuantiles) != 0 {
			t.Fatalf("%s: quantiles %q without key_quantiles", ts.Tablet.TabletId, ts.AccessQuantiles)
		}
	}
}
