package statuspage

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/master"
)

func tl(table, start, end string, reads float64, quantiles ...string) *master.TabletLoad {
	t := &master.TabletLoad{Table: table, ID: start + "-" + end, Start: []byte(start), End: []byte(end), ReadsPerSec: reads, WritesPerSec: reads / 2}
	for _, q := range quantiles {
		t.AccessQuantiles = append(t.AccessQuantiles, []byte(q))
	}
	return t
}

func cellsText(cs []Cell) string {
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("[%s,%s)%g ", c.Start, c.End, c.Reads)
	}
	return s
}

// TestReduceSpreadsTabletsAtTheirQuantiles: a tablet's load is spread
// evenly over the sub-ranges its access quantiles cut; quantiles outside
// the tablet or repeated are ignored; tablets come in key order whatever
// the report's order.
func TestReduceSpreadsTabletsAtTheirQuantiles(t *testing.T) {
	got := Reduce([]*master.TabletLoad{
		tl("t", "m", "", 0),
		tl("t", "", "m", 90, "c", "c", "f", "a\x00", "z"), // "a\x00" < "c": not ascending; "z" is past "m"
	}, 100, 64)
	if want := "[,c)30 [c,f)30 [f,m)30 [m,)0 "; cellsText(got) != want {
		t.Fatalf("cells %s, want %s", cellsText(got), want)
	}
	if got[0].Writes != 15 {
		t.Errorf("writes of the first cell %g, want 15", got[0].Writes)
	}
}

// TestReduceMergesColdestPairsFirst: beyond the row limit adjacent cells
// merge, the coldest first, so a hot range keeps its own rows.
func TestReduceMergesColdestPairsFirst(t *testing.T) {
	var ts []*master.TabletLoad
	for i := range 10 {
		reads := 1.0
		if i == 6 {
			reads = 1000
		}
		ts = append(ts, tl("t", fmt.Sprintf("k%d", i), fmt.Sprintf("k%d", i+1), reads))
	}
	got := Reduce(ts, 4, 64)
	if len(got) != 4 {
		t.Fatalf("%d cells, want 4: %s", len(got), cellsText(got))
	}
	hot := 0
	for _, c := range got {
		if c.Reads >= 1000 {
			hot++
			if c.Start != "k6" || c.End != "k7" {
				t.Errorf("the hot tablet was merged: %s", cellsText(got))
			}
		}
	}
	if hot != 1 {
		t.Errorf("%d hot cells, want 1: %s", hot, cellsText(got))
	}
	var sum float32
	for _, c := range got {
		sum += c.Reads
	}
	if sum != 1009 {
		t.Errorf("merging lost load: %g reads/s in all, want 1009", sum)
	}
	// Keys are cut.
	if c := Reduce([]*master.TabletLoad{tl("t", "abcdefgh", "", 1)}, 4, 3); c[0].Start != "abc" {
		t.Errorf("key not cut to 3 bytes: %q", c[0].Start)
	}
}

func report(at time.Time, tablets ...*master.TabletLoad) *master.LoadReport {
	r := &master.LoadReport{At: at, Servers: map[string]*master.ServerLoad{}, Tablets: map[string]*master.TabletLoad{}}
	for _, t := range tablets {
		r.Tablets[t.Table+"/"+t.ID] = t
	}
	return r
}

// TestHeatmapHistoryIsBounded: at most Columns columns per table, tables
// gone from the reports age out, and MaxCells holds across tables by
// dropping the oldest columns and cutting rows.
func TestHeatmapHistoryIsBounded(t *testing.T) {
	h := NewHeatmaps(HeatmapOptions{Columns: 5, Rows: 8, MinRows: 2, MaxCells: 40})
	base := time.Unix(1_000_000, 0)
	for i := range 12 {
		var ts []*master.TabletLoad
		for j := range 20 {
			ts = append(ts, tl("big", fmt.Sprintf("k%02d", j), fmt.Sprintf("k%02d", j+1), float64(j)))
		}
		if i < 3 {
			ts = append(ts, tl("gone", "", "", 1))
		}
		h.Observe(report(base.Add(time.Duration(i)*10*time.Second), ts...))
		if n := h.Cells(); n > 40 {
			t.Fatalf("report %d: %d cells kept, budget 40", i, n)
		}
	}
	cols := h.Columns("big")
	if len(cols) != 5 {
		t.Fatalf("%d columns of big, want 5", len(cols))
	}
	if !cols[4].At.Equal(base.Add(110 * time.Second)) {
		t.Errorf("newest column at %v", cols[4].At)
	}
	for _, c := range cols {
		if len(c.Cells) != 8 {
			t.Errorf("a column of %d cells, want 8 (Rows)", len(c.Cells))
		}
	}
	if got := h.Columns("gone"); len(got) != 0 {
		t.Errorf("a table gone for 9 reports still has %d columns", len(got))
	}

	// Many tables share the budget: rows are cut to MinRows, and the
	// oldest columns go first.
	h = NewHeatmaps(HeatmapOptions{Columns: 5, Rows: 8, MinRows: 2, MaxCells: 40})
	for i := range 3 {
		var ts []*master.TabletLoad
		for tab := range 10 {
			for j := range 4 {
				ts = append(ts, tl(fmt.Sprintf("t%d", tab), fmt.Sprintf("k%d", j), fmt.Sprintf("k%d", j+1), 1))
			}
		}
		h.Observe(report(base.Add(time.Duration(i)*time.Second), ts...))
		if n := h.Cells(); n > 40 {
			t.Fatalf("report %d: %d cells kept, budget 40", i, n)
		}
	}
	if c := h.Columns("t3"); len(c) != 2 || len(c[0].Cells) != 2 {
		t.Errorf("t3 has %d columns (want the last 2), cells %v", len(c), c)
	}
}

// TestHeatmapSharesKeys: a table whose tablets do not change keeps each
// key once, whatever the history's length.
func TestHeatmapSharesKeys(t *testing.T) {
	h := NewHeatmaps(HeatmapOptions{})
	for i := range 3 {
		h.Observe(report(time.Unix(int64(i), 0), tl("t", "", string(make([]byte, 40)), 1), tl("t", string(make([]byte, 40)), "", 1)))
	}
	cols := h.Columns("t")
	a, b := cols[0].Cells[0].End, cols[2].Cells[0].End
	if len(a) != 40 || unsafeData(a) != unsafeData(b) || unsafeData(a) != unsafeData(cols[1].Cells[1].Start) {
		t.Errorf("the key is not shared between columns")
	}
}

// TestHeatmapReusesAnUnchangedRound: a report with the same tablets as the
// last one reduced (an idle round: master.LoadReport.SameTablets) adds a
// column without reducing every tablet again.
func TestHeatmapReusesAnUnchangedRound(t *testing.T) {
	h := NewHeatmaps(HeatmapOptions{})
	rep := report(time.Unix(1, 0), tl("t", "", "m", 1), tl("t", "m", "", 3))
	h.Observe(rep)
	h.Observe(rep)
	if h.reductions != 1 {
		t.Fatalf("%d reductions for one report observed twice, want 1", h.reductions)
	}
	cols := h.Columns("t")
	if len(cols) != 2 || !slices.Equal(cols[0].Cells, cols[1].Cells) {
		t.Fatalf("columns %+v", cols)
	}
	h.Observe(report(time.Unix(2, 0), tl("t", "", "", 5)))
	if cols := h.Columns("t"); h.reductions != 2 || len(cols) != 3 || len(cols[2].Cells) != 1 {
		t.Fatalf("a changed report: %d reductions, columns %+v", h.reductions, cols)
	}
}

// TestReduceCutsNoMoreThanTheRowsHold: with few rows per tablet, a tablet
// is cut at evenly spaced quantiles only.
func TestReduceCutsNoMoreThanTheRowsHold(t *testing.T) {
	qs := []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} // 8 equal parts
	got := Reduce([]*master.TabletLoad{tl("t", "a", "b", 80, qs...), tl("t", "b", "c", 0), tl("t", "c", "", 0)}, 6, 64)
	// 6 rows, 3 tablets: one cut each, at the middle quantile.
	if want := "[a,a4)40 [a4,b)40 [b,c)0 [c,)0 "; cellsText(got) != want {
		t.Fatalf("cells %s, want %s", cellsText(got), want)
	}
	if got := pick([][]byte{[]byte("1"), []byte("2"), []byte("3")}, 1); len(got) != 1 || string(got[0]) != "2" {
		t.Errorf("pick 1 of 3 = %q, want the middle one", got)
	}
}
