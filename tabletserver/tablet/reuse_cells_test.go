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
	"github.com/tabuladb/tabula/sstable"
)

// scanCopy scans tb with opts and returns every row's cells copied at the
// step that returned them, and the cells as returned (shallow copies:
// their bytes are the engine's).
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
		returned = append(returned, slices.Clone(cs))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return copied, returned
}

// recyclingTablet is a tablet of random rows in two SSTables and a
// memtable, read without a block cache, so that every block a scan with
// ReuseCells or a compaction leaves is recycled at once (and, in race
// builds, poisoned: see sstable/blockbuf.go).
func recyclingTablet(t *testing.T) *Tablet {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	opts := testOptions(t.TempDir())
	opts.Cache = sstable.NewCache(0)
	tb := openTablet(t, opts)
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
	return tb
}

// TestReuseCellsReadsTheSameRows checks that a scan with ReuseCells
// returns the rows a scan without it returns, forwards and reversed, with
// and without a filter, from memtables and SSTables, while the blocks it
// leaves are recycled under it: each row is copied at the step that
// returned it, when its bytes must still be intact.
func TestReuseCellsReadsTheSameRows(t *testing.T) {
	tb := recyclingTablet(t)
	filters := []*rowfilter.Filter{nil, rowfilter.Chain(rowfilter.Family("b"), rowfilter.CellsPerColumnLimit(1))}
	for _, reverse := range []bool{false, true} {
		for fi, f := range filters {
			opts := ReadOptions{Reverse: reverse, Filter: f}
			want, _ := scanCopy(t, tb, opts)
			opts.ReuseCells = true
			before := sstable.RecycledBlocks()
			got, _ := scanCopy(t, tb, opts)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("reverse=%v filter %d: %d rows with ReuseCells, %d without", reverse, fi, len(got), len(want))
			}
			for i := range want {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("reverse=%v filter %d: row %d is %v with ReuseCells, %v without", reverse, fi, i, got[i], want[i])
				}
			}
			if n := sstable.RecycledBlocks() - before; !reverse && n == 0 {
				t.Fatalf("filter %d: a forward scan with ReuseCells recycled no block", fi)
			}
		}
	}
}

// TestKeptCellsSurviveRecycling: the cells of point reads and of scans
// without ReuseCells stay valid for good, while scans with ReuseCells and
// compactions recycle the blocks they read: their blocks are never
// recycled under them.
func TestKeptCellsSurviveRecycling(t *testing.T) {
	tb := recyclingTablet(t)
	want, kept := scanCopy(t, tb, ReadOptions{})
	wantRow := map[string]string{}
	for _, cs := range want {
		wantRow[string(cs[0].Row)] = fmt.Sprint(cs)
	}
	// Point reads recycle their blocks as they return: each row must be
	// right when it is returned and stay right after.
	var points [][]cell.Cell
	check := func(when string) {
		t.Helper()
		for _, cs := range points {
			if got, w := fmt.Sprint(cs), wantRow[string(cs[0].Row)]; got != w {
				t.Fatalf("point read of %q %s: %v, want %v", cs[0].Row, when, got, w)
			}
		}
	}
	for i := 0; i < 500; i += 7 {
		cs, err := tb.ReadRow(bg, []byte(fmt.Sprintf("row%04d", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 0 {
			points = append(points, cs)
		}
	}
	if len(points) < 20 {
		t.Fatalf("only %d rows read", len(points))
	}
	check("as returned")
	before := sstable.RecycledBlocks()
	for i := 0; i < 3; i++ {
		scanCopy(t, tb, ReadOptions{ReuseCells: true})
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	scanCopy(t, tb, ReadOptions{ReuseCells: true})
	if sstable.RecycledBlocks() == before {
		t.Fatal("nothing was recycled: the test shows nothing")
	}
	for i := range want {
		if fmt.Sprint(kept[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("row %d of a scan without ReuseCells changed after blocks were recycled: %v, was %v", i, kept[i], want[i])
		}
	}
	check("after blocks were recycled")
}

// TestReuseCellsScanAllocationsDoNotGrowWithRows: a scan with ReuseCells
// writes each row's decoded key and qualifiers over the previous row's,
// so reading 8× the rows allocates no more (rows of 48 bytes: without the
// reuse, 1,000 more rows are 48 KB more of arena chunks).
func TestReuseCellsScanAllocationsDoNotGrowWithRows(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocations")
	}
	tb := openTablet(t, testOptions(t.TempDir()))
	const rows = 8000
	for i := range rows {
		apply(t, tb, fmt.Sprintf("%044d\x00row", i), set("a", "q", 1, "v"))
	}
	allocs := func(limit int64) float64 {
		return testing.AllocsPerRun(5, func() {
			it, err := tb.NewRowIterator(bg, ReadOptions{ReuseCells: true, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			n := int64(0)
			for it.Next() {
				n++
			}
			if err := it.Close(); err != nil || n != limit {
				t.Fatalf("scan of %d rows: %d rows, %v", limit, n, err)
			}
		})
	}
	if few, many := allocs(rows/8), allocs(rows); many > few {
		t.Fatalf("a scan of %d rows allocates %v times, of %d rows %v times", rows/8, few, rows, many)
	}
}
