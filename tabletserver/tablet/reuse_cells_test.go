package tablet

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

// scanCopy scans tb with opts and returns every row's cells copied at the
// step that returned them, and the cells as returned (whose slices
// ReuseCells lets the iterator overwrite, but whose bytes stay valid).
func scanCopy(t *testing.T, tb *Tablet, opts ReadOptions) (copied, returned [][]cell.Cell) {
	t.Helper()
	it, err := tb.NewRowIterator(bg, opts)
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		cs := it.Cells()
		var cp []cell.Cell
		for _, c := range cs {
			c.Row, c.Qualifier, c.Value = bytes.Clone(c.Row), bytes.Clone(c.Qualifier), bytes.Clone(c.Value)
			c.Labels = slices.Clone(c.Labels)
			cp = append(cp, c)
		}
		copied = append(copied, cp)
		// Keep the returned cells' contents (not the slice) the way the
		// tablet server does: a shallow copy of each cell.
		returned = append(returned, slices.Clone(cs))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return copied, returned
}

// TestReuseCellsReadsTheSameRows checks that a scan with ReuseCells
// returns the rows a scan without it returns, forwards and reversed, with
// and without a filter, from memtables and SSTables; and that the bytes of
// every cell it returned (row, qualifier, value) are still intact at the
// end of the scan, although the cell slices were written over.
func TestReuseCellsReadsTheSameRows(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	tb := openTablet(t, testOptions(t.TempDir()))
	for round := 0; round < 3; round++ {
		for i := 0; i < 300; i++ {
			row := []byte(fmt.Sprintf("row%04d", r.Intn(500)))
			var ms []cell.Mutation
			for j := r.Intn(4); j >= 0; j-- {
				v := make([]byte, r.Intn(200))
				r.Read(v)
				ms = append(ms, set([]string{"a", "b"}[r.Intn(2)], fmt.Sprint("q", r.Intn(5)), int64(r.Intn(4)), string(v)))
			}
			if r.Intn(10) == 0 {
				ms = append(ms, delCol("a", fmt.Sprint("q", r.Intn(5)), 0, 0))
			}
			if err := tb.Apply(bg, row, ms); err != nil {
				t.Fatal(err)
			}
		}
		if round < 2 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	filters := []*rowfilter.Filter{nil, rowfilter.Chain(rowfilter.Family("b"), rowfilter.CellsPerColumnLimit(1))}
	for _, reverse := range []bool{false, true} {
		for fi, f := range filters {
			opts := ReadOptions{Reverse: reverse, Filter: f}
			want, _ := scanCopy(t, tb, opts)
			opts.ReuseCells = true
			got, returned := scanCopy(t, tb, opts)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("reverse=%v filter %d: %d rows with ReuseCells, %d without", reverse, fi, len(got), len(want))
			}
			for i := range want {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("reverse=%v filter %d: row %d is %v with ReuseCells, %v without", reverse, fi, i, got[i], want[i])
				}
				if fmt.Sprint(returned[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("reverse=%v filter %d: row %d's bytes changed after the scan went on: %v, was %v", reverse, fi, i, returned[i], want[i])
				}
			}
		}
	}
}
