package tablet

import (
	"errors"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

// Labels and sinks reach a read's output through the engine (whose read
// planner must read what a sink needs), and a CheckAndMutate predicate
// matches on whatever reaches the output, labels aside.

func TestReadsCarryLabelsAndSinks(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "q", 2, "x"), set("a", "q", 1, "y"), set("b", "p", 5, "z"))
	f := rowfilter.Chain(
		rowfilter.Interleave(
			rowfilter.Chain(rowfilter.Family("b"), rowfilter.Label("seen-b"), rowfilter.Sink()),
			rowfilter.Chain(rowfilter.Family("a"), rowfilter.Label("newest"))),
		rowfilter.CellsPerColumnLimit(1),
	)
	want := "a:q@2=x#newest b:p@5=z#seen-b"
	if got := readRow(t, tb, "r", f); got != want {
		t.Errorf("ReadRow: got %q, want %q", got, want)
	}
	if err := tb.Flush(bg); err != nil { // and from an SSTable
		t.Fatal(err)
	}
	if got := scan(t, tb, ReadOptions{Filter: f}); got != "r{"+want+"}" {
		t.Errorf("scan: got %q, want %q", got, "r{"+want+"}")
	}
	if got := readRow(t, tb, "r", nil); got != "a:q@2=x a:q@1=y b:p@5=z" {
		t.Errorf("labels were stored: %q", got)
	}
}

func TestCheckAndMutateWithNewFilters(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "flag", 1, "yes"))
	cases := []struct {
		name    string
		pred    *rowfilter.Filter
		matched bool
	}{
		{"labelled predicate", rowfilter.Chain(rowfilter.Family("a"), rowfilter.Label("l")), true},
		{"only a sink sees the cell", rowfilter.Chain(rowfilter.QualifierRegex("flag"), rowfilter.Sink()), true},
		{"the sink sees nothing", rowfilter.Chain(rowfilter.ValueRegex("no"), rowfilter.Sink()), false},
		{"condition with labelled predicate", rowfilter.Condition(rowfilter.Label("p"), rowfilter.Pass(), nil), true},
	}
	for _, c := range cases {
		matched, err := tb.CheckAndMutate(bg, []byte("r"), c.pred,
			[]cell.Mutation{set("a", "out", 1, "true")}, []cell.Mutation{set("a", "out", 1, "false")})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if matched != c.matched {
			t.Errorf("%s: matched %v, want %v", c.name, matched, c.matched)
		}
	}
	bad := rowfilter.Condition(rowfilter.Sink(), rowfilter.Pass(), nil)
	if _, err := tb.CheckAndMutate(bg, []byte("r"), bad, nil, nil); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("sink in a condition: %v, want ErrInvalid", err)
	}
}
