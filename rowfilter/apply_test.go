package rowfilter

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// testRow is a row in read order.
var testRow = []cell.Cell{
	mk("a", "x", 30, "v3"),
	mk("a", "x", 20, "v2"),
	mk("a", "x", 10, "v1"),
	mk("a", "y", 50, "w"),
	mk("b", "", 7, "empty-qualifier"),
	mk("b", "x", 40, "u"),
	mk("b", "z", 10, ""),
	mk("c", "q\n", 90, "new\nline"),
}

func mk(family, qualifier string, ts int64, value string) cell.Cell {
	return cell.Cell{Row: []byte("row1"), Family: family, Qualifier: []byte(qualifier), Timestamp: ts, Value: []byte(value)}
}

// show renders cells as "family:qualifier@ts=value" for readable diffs.
func show(cells []cell.Cell) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		v := string(c.Value)
		if c.Value == nil {
			v = "<nil>"
		}
		parts[i] = fmt.Sprintf("%s:%q@%d=%q", c.Family, c.Qualifier, c.Timestamp, v)
		if c.Labels != nil {
			parts[i] += fmt.Sprintf("%q", c.Labels)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// pick returns testRow's cells at the given indexes, in the given order.
func pick(idx ...int) []cell.Cell {
	out := make([]cell.Cell, len(idx))
	for i, j := range idx {
		out[i] = testRow[j]
	}
	return out
}

func all() []int { return []int{0, 1, 2, 3, 4, 5, 6, 7} }

func TestApply(t *testing.T) {
	tests := []struct {
		name string
		f    *Filter
		want []int // indexes into testRow
	}{
		{"nil filter", nil, all()},
		{"pass", Pass(), all()},
		{"block", Block(), nil},
		{"empty chain passes", Chain(), all()},
		{"empty interleave blocks", Interleave(), nil},
		{"row key regex matches whole key", RowKeyRegex(`row\d`), all()},
		{"row key regex is anchored", RowKeyRegex(`row`), nil},
		{"row key regex unanchored with .*", RowKeyRegex(`.*ow.*`), all()},
		{"row key prefix", RowKeyPrefix([]byte("ro")), all()},
		{"row key prefix no", RowKeyPrefix([]byte("rx")), nil},
		{"family", Family("b"), []int{4, 5, 6}},
		{"family absent", Family("zz"), nil},
		{"family regex", FamilyRegex(`a|c`), []int{0, 1, 2, 3, 7}},
		{"family regex anchored", FamilyRegex(`^b`), []int{4, 5, 6}},
		{"family regex partial does not match", FamilyRegex(`[ab]x?y`), nil},
		{"qualifier regex", QualifierRegex(`x`), []int{0, 1, 2, 5}},
		{"qualifier regex matches empty", QualifierRegex(``), []int{4}},
		{"qualifier regex dot skips newline", QualifierRegex(`q.`), nil},
		{"qualifier regex (?s) dot matches newline", QualifierRegex(`(?s)q.`), []int{7}},
		{"qualifier regex any byte", QualifierRegex(`q\C`), []int{7}},
		{"qualifier range [x, z) any family", QualifierRange("", []byte("x"), []byte("z")), []int{0, 1, 2, 3, 5}},
		{"qualifier range of family b", QualifierRange("b", []byte("x"), nil), []int{5, 6}},
		{"qualifier range from nil start", QualifierRange("b", nil, []byte("y")), []int{4, 5}},
		{"qualifier range open start", &Filter{Kind: KindQualifierRange, Family: "b", StartOpen: true}, []int{5, 6}},
		{"qualifier range closed end", &Filter{Kind: KindQualifierRange, Start: []byte("y"), End: []byte("z")}, []int{3, 6}},
		{"qualifier range open both", &Filter{Kind: KindQualifierRange, Start: []byte("x"), End: []byte("z"), StartOpen: true, EndOpen: true}, []int{3}},
		{"qualifier range empty end", &Filter{Kind: KindQualifierRange, End: []byte{}}, []int{4}},
		{"timestamp range", TimestampRange(10, 31), []int{0, 1, 2, 6}},
		{"timestamp range unbounded", TimestampRange(40, 0), []int{3, 5, 7}},
		{"timestamp range empty", TimestampRange(10, 10), nil},
		{"value regex", ValueRegex(`v\d`), []int{0, 1, 2}},
		{"value regex empty value", ValueRegex(``), []int{6}},
		{"value range [u, w)", ValueRange([]byte("u"), []byte("w")), []int{0, 1, 2, 5}},
		{"value range closed", &Filter{Kind: KindValueRange, Start: []byte("u"), End: []byte("w")}, []int{0, 1, 2, 3, 5}},
		{"value range open start", &Filter{Kind: KindValueRange, Start: []byte("v2"), StartOpen: true}, []int{0, 3}},
		{"cells per row limit", CellsPerRowLimit(3), []int{0, 1, 2}},
		{"cells per row limit above size", CellsPerRowLimit(100), all()},
		{"cells per row offset", CellsPerRowOffset(6), []int{6, 7}},
		{"cells per row offset zero", CellsPerRowOffset(0), all()},
		{"cells per row offset past end", CellsPerRowOffset(8), nil},
		{"cells per column limit", CellsPerColumnLimit(1), []int{0, 3, 4, 5, 6, 7}},
		{"cells per column limit 2", CellsPerColumnLimit(2), []int{0, 1, 3, 4, 5, 6, 7}},
		{"same qualifier in two families counts apart", Chain(QualifierRegex("x"), CellsPerColumnLimit(1)), []int{0, 5}},

		// Composition.
		{"chain family, qualifier range, versions, limit",
			Chain(Family("a"), QualifierRange("a", []byte("a"), nil), CellsPerColumnLimit(2), CellsPerRowLimit(3)),
			[]int{0, 1, 3}},
		{"chain order matters: limit then family", Chain(CellsPerRowLimit(2), Family("b")), nil},
		{"chain order matters: family then limit", Chain(Family("b"), CellsPerRowLimit(2)), []int{4, 5}},
		{"chain offset then limit", Chain(CellsPerRowOffset(1), CellsPerRowLimit(2)), []int{1, 2}},
		{"chain with block", Chain(Pass(), Block()), nil},
		{"interleave merges in read order", Interleave(Family("c"), Family("a")), []int{0, 1, 2, 3, 7}},
		{"interleave keeps duplicates", Interleave(Family("b"), QualifierRegex("z")), []int{4, 5, 6, 6}},
		{"interleave of pass and pass duplicates all", Interleave(Pass(), Pass()), []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}},
		{"interleave of versions and time range", Interleave(CellsPerColumnLimit(1), TimestampRange(0, 11)),
			[]int{0, 2, 3, 4, 4, 5, 6, 6, 7}},
		{"interleave with block", Interleave(Block(), Family("c")), []int{7}},
		{"condition true", Condition(ValueRegex("u"), Family("a"), Family("b")), []int{0, 1, 2, 3}},
		{"condition false", Condition(ValueRegex("nope"), Family("a"), Family("b")), []int{4, 5, 6}},
		{"condition true with nil true branch", Condition(Pass(), nil, Pass()), nil},
		{"condition false with nil false branch", Condition(Block(), Pass(), nil), nil},
		{"condition predicate sees the chain's input", Chain(Family("a"), Condition(Family("b"), Pass(), StripValue())),
			[]int{0, 1, 2, 3}}, // values checked below: stripped
		{"nested", Interleave(
			Chain(Family("a"), Condition(QualifierRegex("y"), CellsPerColumnLimit(1), Block())),
			Chain(RowKeyPrefix([]byte("row")), Family("c")),
			Condition(RowKeyRegex("nope"), Pass(), Chain(Family("b"), CellsPerRowOffset(2))),
		), []int{0, 3, 6, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.f)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			in := slices.Clone(testRow)
			got := c.Apply([]byte("row1"), in)
			want := pick(tc.want...)
			if strings.Contains(tc.name, "predicate sees") {
				for i := range want {
					want[i].Value = nil
				}
			}
			if show(got) != show(want) {
				t.Errorf("Apply\n got %s\nwant %s", show(got), show(want))
			}
			if !slices.EqualFunc(in, testRow, func(a, b cell.Cell) bool { return show([]cell.Cell{a}) == show([]cell.Cell{b}) }) {
				t.Errorf("Apply modified its input: %s", show(in))
			}
			if len(got) == 0 && got != nil {
				t.Errorf("empty result is not nil")
			}
			if cap(got) != len(got) {
				t.Errorf("result has spare capacity %d > %d: appending would write into the input", cap(got), len(got))
			}
		})
	}
}

func TestStripValue(t *testing.T) {
	c, err := Compile(Chain(Family("a"), StripValue()))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Apply([]byte("row1"), testRow)
	if len(got) != 4 {
		t.Fatalf("got %d cells, want 4", len(got))
	}
	for i, g := range got {
		if g.Value != nil {
			t.Errorf("cell %d value %q, want nil", i, g.Value)
		}
		if g.Timestamp != testRow[i].Timestamp || string(g.Qualifier) != string(testRow[i].Qualifier) {
			t.Errorf("cell %d changed beyond its value: %s", i, show(got[i:i+1]))
		}
	}
	if string(testRow[0].Value) != "v3" {
		t.Errorf("StripValue modified the input's value")
	}
}

func TestApplyEmptyRow(t *testing.T) {
	c, err := Compile(Condition(Block(), nil, Pass()))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Apply([]byte("r"), nil); got != nil {
		t.Errorf("Apply(empty) = %s", show(got))
	}
	var nilCompiled *Compiled
	if got := nilCompiled.Apply([]byte("r"), testRow); len(got) != len(testRow) {
		t.Errorf("nil *Compiled should pass everything, got %s", show(got))
	}
}

// TestOutputInReadOrder checks that every filter keeps read order, which
// the cells-per-column limit and interleave rely on.
func TestOutputInReadOrder(t *testing.T) {
	f := Interleave(
		Chain(Interleave(Family("b"), Pass()), CellsPerColumnLimit(2)),
		Condition(Family("c"), Chain(CellsPerRowOffset(2), StripValue()), nil),
		TimestampRange(0, 25),
	)
	c, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Apply([]byte("row1"), testRow)
	if !slices.IsSortedFunc(got, func(a, b cell.Cell) int { return cell.Compare(&a, &b) }) {
		t.Errorf("output not in read order: %s", show(got))
	}
	if len(got) == 0 {
		t.Fatal("no output")
	}
}
