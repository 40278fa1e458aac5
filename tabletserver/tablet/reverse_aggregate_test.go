package tablet

import (
	"fmt"
	"strings"
	"testing"
)

// scanAgg renders the rows of a read, each "row{fam:q@ts=N ...}" with
// aggregate values as integers.
func scanAgg(t testing.TB, tb *Tablet, opts ReadOptions) string {
	t.Helper()
	it, err := tb.NewRowIterator(bg, opts)
	if err != nil {
		t.Fatalf("NewRowIterator: %v", err)
	}
	var rows []string
	for it.Next() {
		rows = append(rows, fmt.Sprintf("%s{%s}", it.Row(), renderAgg(it.Cells())))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return strings.Join(rows, " ")
}

// TestAggregateReversedReadMergesInputs: a reversed scan merges the inputs
// of an aggregate cell as a forward read does, wherever they are (several
// in the memtable, one per SSTable, replayed logs). The reversed cursors
// were built without the family's value type, so the newest input stood
// for the cell.
func TestAggregateReversedReadMergesInputs(t *testing.T) {
	for _, st := range []stage{inMemtable, flushed, compacted, replayed} {
		t.Run(st.String(), func(t *testing.T) {
			s := newStepper(t, st)
			for _, row := range []string{"r1", "r2"} {
				s.apply(row, add("sum", "q", 10, 9), add("max", "q", 1, 3))
				s.apply(row, add("sum", "q", 10, -2), add("max", "q", 1, 8))
				s.apply(row, add("sum", "q", 20, 1), mergeTo("min", "q", 1, 5), add("max", "q", 1, -4))
				s.apply(row, mergeTo("min", "q", 1, -6), add("sum", "q", 20, 1))
			}
			cells := "max:q@1=8 min:q@1=-6 sum:q@20=2 sum:q@10=7"
			if got, want := scanAgg(t, s.tb, ReadOptions{}), "r1{"+cells+"} r2{"+cells+"}"; got != want {
				t.Fatalf("forward scan: %q, want %q", got, want)
			}
			if got, want := scanAgg(t, s.tb, ReadOptions{Reverse: true}), "r2{"+cells+"} r1{"+cells+"}"; got != want {
				t.Fatalf("reversed scan: %q, want %q", got, want)
			}
		})
	}
}

// TestAggregateReversedSnapshotUnderFlushAndCompaction is the model test's
// case (seed 1796120497742046901): two inputs of one cell in the memtable,
// a reversed iterator opened, then more input, a flush and a merging
// compaction before the iterator is drained. The iterator shows the cell
// as of its opening: both inputs merged, the later one left out.
func TestAggregateReversedSnapshotUnderFlushAndCompaction(t *testing.T) {
	s := newStepper(t, inMemtable)
	apply(t, s.tb, "r0", add("sum", "q", 1, 1))
	if err := s.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, s.tb, "r1", add("sum", "q", 10, 9))
	apply(t, s.tb, "r1", add("sum", "q", 10, -2))
	it, err := s.tb.NewRowIterator(bg, ReadOptions{Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s.tb, "r1", add("sum", "q", 10, 100))
	if err := s.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := s.tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for it.Next() {
		rows = append(rows, fmt.Sprintf("%s{%s}", it.Row(), renderAgg(it.Cells())))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rows, " "), "r1{sum:q@10=7} r0{sum:q@1=1}"; got != want {
		t.Fatalf("reversed iterator opened before the change saw %q, want %q", got, want)
	}
	if got, want := scanAgg(t, s.tb, ReadOptions{Reverse: true}), "r1{sum:q@10=107} r0{sum:q@1=1}"; got != want {
		t.Fatalf("reversed scan after the change: %q, want %q", got, want)
	}
}
