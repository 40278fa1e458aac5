package tablet

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// Reads hand out values that alias the memtable's copies and decoded
// SSTable blocks (no copy per read). These tests pin the two promises that
// make that safe: a writer's buffer is not kept, and cells handed out stay
// intact while the tablet moves on.

func TestApplyDoesNotKeepCallerBuffers(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	val := []byte("original")
	q := []byte("q")
	if err := tb.Apply(bg, []byte("r"), []cell.Mutation{{Kind: cell.SetCell, Family: "b", Qualifier: q, Timestamp: 1, Value: val}}); err != nil {
		t.Fatal(err)
	}
	copy(val, "CHANGED!")
	copy(q, "x")
	if got := readRow(t, tb, "r", nil); got != "b:q@1=original" {
		t.Fatalf("after the caller reused its buffers the row reads %q", got)
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if got := readRow(t, tb, "r", nil); got != "b:q@1=original" {
		t.Fatalf("after a flush the row reads %q", got)
	}
}

func TestScannedCellsOutliveTheIterator(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	const n = 3000
	want := func(i int) string {
		return fmt.Sprintf("value-%05d-%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, i%200))
	}
	for i := 0; i < n; i++ {
		row := fmt.Sprintf("row%05d", i)
		if i == n/2 {
			if err := tb.Flush(bg); err != nil { // half in an SSTable, half in the memtable
				t.Fatal(err)
			}
		}
		apply(t, tb, row, set("b", "q", 1, want(i)), set("a", "q", 2, want(i)))
	}
	it, err := tb.NewRowIterator(bg, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	var kept [][]cell.Cell
	for it.Next() {
		rows = append(rows, it.Row())
		kept = append(kept, it.Cells())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// Move the data on: overwrite, flush, compact (the blocks the cells
	// came from are dropped from the version and the cache).
	for i := 0; i < n; i += 7 {
		apply(t, tb, fmt.Sprintf("row%05d", i), set("b", "q", 1, "overwritten"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if len(kept) != n {
		t.Fatalf("scan returned %d rows, want %d", len(kept), n)
	}
	for i, cells := range kept {
		if string(rows[i]) != fmt.Sprintf("row%05d", i) {
			t.Fatalf("row %d is %q", i, rows[i])
		}
		if len(cells) != 2 {
			t.Fatalf("row %d has %d cells", i, len(cells))
		}
		for _, c := range cells {
			if string(c.Value) != want(i) || string(c.Row) != string(rows[i]) || string(c.Qualifier) != "q" {
				t.Fatalf("row %d cell %s:%s = %q, want %q", i, c.Family, c.Qualifier, c.Value, want(i))
			}
		}
	}
}
