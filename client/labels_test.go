package client

import (
	"context"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/rowfilter"
)

// TestRowsCarryLabels: the cells of a Row carry the labels the filter put
// on them, on point reads and scans.
func TestRowsCarryLabels(t *testing.T) {
	c := newCluster(t, 1)
	tbl := c.client(t).Open("t")
	fill(t, tbl, []string{"k"})
	ctx := context.Background()
	f := rowfilter.Interleave(
		rowfilter.Chain(rowfilter.Family("cf"), rowfilter.Label("first")),
		rowfilter.Chain(rowfilter.Family("cf"), rowfilter.Label("second")),
	)
	check := func(what string, row Row) {
		t.Helper()
		if len(row.Cells) != 2 || !slices.Equal(row.Cells[0].Labels, []string{"first"}) || !slices.Equal(row.Cells[1].Labels, []string{"second"}) {
			t.Errorf("%s: cells %+v, want the cf cell twice, labelled first then second", what, row.Cells)
		}
	}
	row, err := tbl.ReadRow(ctx, []byte("k"), WithFilter(f))
	if err != nil {
		t.Fatal(err)
	}
	check("ReadRow", row)
	it := tbl.ReadRows(ctx, nil, WithFilter(f))
	defer it.Close()
	if !it.Next() {
		t.Fatalf("scan: no row: %v", it.Err())
	}
	check("ReadRows", it.Row())
}
