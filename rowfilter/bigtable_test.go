package rowfilter

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// The filters and rules that make RowFilter exact against Cloud Bigtable's
// (google.bigtable.v2.RowFilter): sinks, labels, row samples, byte-mode
// regexes and Bigtable's validation.

func labelled(c cell.Cell, labels ...string) cell.Cell {
	c.Labels = labels
	return c
}

func applyOK(t *testing.T, f *Filter, row []byte, in []cell.Cell) []cell.Cell {
	t.Helper()
	c, err := Compile(f)
	if err != nil {
		t.Fatalf("Compile(%s): %v", f, err)
	}
	return c.Apply(row, in)
}

// TestSinkBigtableExample is the example of RowFilter.sink's documentation:
// a copy of every cell that reaches the sink is in the result, even the
// ones a later filter of the chain drops.
func TestSinkBigtableExample(t *testing.T) {
	row := []byte("r")
	aa := cell.Cell{Row: row, Family: "A", Qualifier: []byte("A"), Timestamp: 1, Value: []byte("w")}
	ab := cell.Cell{Row: row, Family: "A", Qualifier: []byte("B"), Timestamp: 2, Value: []byte("x")}
	bb := cell.Cell{Row: row, Family: "B", Qualifier: []byte("B"), Timestamp: 4, Value: []byte("z")}
	f := Chain(
		FamilyRegex("A"),
		Interleave(Pass(), Chain(Label("foo"), Sink())),
		QualifierRegex("B"),
	)
	got := applyOK(t, f, row, []cell.Cell{aa, ab, bb})
	// Equal cells: the root's output first, then the sinks'.
	want := []cell.Cell{labelled(aa, "foo"), ab, labelled(ab, "foo")}
	if show(got) != show(want) {
		t.Errorf("got  %s\nwant %s", show(got), show(want))
	}
}

func TestSink(t *testing.T) {
	tests := []struct {
		name string
		f    *Filter
		want []int
	}{
		{"root sink outputs its input", Sink(), all()},
		{"sink emits nothing to its parent", Chain(Sink(), Family("a")), all()},
		{"sink then block still outputs", Chain(Family("b"), Sink(), Block()), []int{4, 5, 6}},
		{"sink sees only what reaches it", Chain(CellsPerRowLimit(2), Sink()), []int{0, 1}},
		{"nothing reaches a sink after block", Chain(Block(), Sink()), nil},
		{"two sinks duplicate", Interleave(Sink(), Chain(Family("c"), Sink())), []int{0, 1, 2, 3, 4, 5, 6, 7, 7}},
		{"sink and root output pooled in read order", Interleave(Chain(Family("c"), Sink()), Family("a")), []int{0, 1, 2, 3, 7}},
		{"sunk cells bypass a parent's limit", Chain(Interleave(Chain(Family("b"), Sink()), Family("a")), CellsPerRowLimit(1)), []int{0, 4, 5, 6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := applyOK(t, tc.f, []byte("row1"), slices.Clone(testRow))
			if want := pick(tc.want...); show(got) != show(want) {
				t.Errorf("got  %s\nwant %s", show(got), show(want))
			}
		})
	}
}

func TestLabels(t *testing.T) {
	lab := func(l string, idx ...int) []cell.Cell {
		out := pick(idx...)
		for i := range out {
			out[i].Labels = []string{l}
		}
		return out
	}
	tests := []struct {
		name string
		f    *Filter
		want []cell.Cell
	}{
		{"label every cell", Chain(Family("b"), Label("x")), lab("x", 4, 5, 6)},
		{"interleave labels separate copies", Interleave(Chain(Family("c"), Label("one")), Chain(Family("c"), Label("two"))),
			append(lab("one", 7), lab("two", 7)...)},
		{"predicate labels never reach the output", Chain(Family("c"), Condition(Label("p"), Pass(), nil)), pick(7)},
		{"branch labels do", Chain(Family("c"), Condition(Pass(), Label("t"), Label("f"))), lab("t", 7)},
		{"strip value keeps the label", Chain(Family("c"), Label("s"), StripValue()),
			[]cell.Cell{{Row: testRow[7].Row, Family: "c", Qualifier: testRow[7].Qualifier, Timestamp: 90, Labels: []string{"s"}}}},
		{"longest label", Chain(Family("c"), Label("abcdefghij-1234")), lab("abcdefghij-1234", 7)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(testRow)
			got := applyOK(t, tc.f, []byte("row1"), in)
			if show(got) != show(tc.want) {
				t.Errorf("got  %s\nwant %s", show(got), show(tc.want))
			}
			for _, c := range in {
				if c.Labels != nil {
					t.Fatalf("Apply labelled its input: %s", show(in))
				}
			}
		})
	}
	// Labels are shared between cells, but appending to one cell's labels
	// never shows in another's.
	got := applyOK(t, Chain(Family("a"), Label("x")), []byte("row1"), testRow)
	got[0].Labels = append(got[0].Labels, "more")
	if len(got[1].Labels) != 1 {
		t.Errorf("appending to a cell's labels changed another cell's: %q", got[1].Labels)
	}
}

func TestRowSample(t *testing.T) {
	var draws []float64
	next := func() float64 {
		d := draws[0]
		draws = draws[1:]
		return d
	}
	c, err := CompileWith(Interleave(Chain(Family("c"), RowSample(0.5)), Chain(Family("zz"), RowSample(0.5)), RowSample(0.25)),
		Options{Rand: next})
	if err != nil {
		t.Fatal(err)
	}
	// One draw per sample that gets cells (the Family("zz") branch gets
	// none); a row passes when the draw is below p.
	draws = []float64{0.49, 0.25}
	if got, want := c.Apply([]byte("row1"), testRow), pick(7); show(got) != show(want) {
		t.Errorf("draws 0.49, 0.25: got %s, want %s", show(got), show(want))
	}
	draws = []float64{0.5, 0.2}
	if got, want := c.Apply([]byte("row1"), testRow), pick(all()...); show(got) != show(want) {
		t.Errorf("draws 0.5, 0.2: got %s, want %s", show(got), show(want))
	}
	if len(draws) != 0 {
		t.Errorf("%d draws left: a sample drew without input or not at all", len(draws))
	}
	// The default source samples about p of the rows.
	c, err = Compile(RowSample(0.3))
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for range 4000 {
		if c.Apply([]byte("r"), testRow) != nil {
			passed++
		}
	}
	if passed < 1000 || passed > 1400 {
		t.Errorf("RowSample(0.3) passed %d of 4000 rows", passed)
	}
}

// TestRegexIsByteMode: Bigtable runs RE2 in Latin-1 mode, where every
// byte is one character, whatever UTF-8 says.
func TestRegexIsByteMode(t *testing.T) {
	tests := []struct {
		re      string
		in      string
		matches bool
	}{
		{".", "é", false}, // two bytes
		{"..", "é", true},
		{`\C`, "é", false},
		{`\C\C`, "é", true},
		{`\C`, "\xc3", true},
		{"é", "é", true}, // a UTF-8 literal is its bytes
		{"[^a]", "\xff", true},
		{"[^a]", "é", false},
		{`\xff`, "\xff", true},
		{`\xff`, "ÿ", false}, // U+00FF in UTF-8 is two bytes
		{`[\x80-\xff]+`, "\x80\xfe", true},
		{`(?i)\xe9`, "\xc9", true},
		{`\x{100}`, "\xc4\x80", false},
		{".*", "a\xffb", true},
	}
	for _, tc := range tests {
		re, err := compileRegex(tc.re)
		if err != nil {
			t.Errorf("compileRegex(%q): %v", tc.re, err)
			continue
		}
		if got := re.Match([]byte(tc.in)); got != tc.matches {
			t.Errorf("%q matches %q = %v, want %v", tc.re, tc.in, got, tc.matches)
		}
		if got := re.MatchString(tc.in); got != tc.matches {
			t.Errorf("%q MatchString %q = %v, want %v", tc.re, tc.in, got, tc.matches)
		}
	}
}

func TestBigtableValidation(t *testing.T) {
	bad := []struct {
		name    string
		f       *Filter
		wantErr string
	}{
		{"two labelled chain children", Chain(Label("a"), Pass(), Label("b")), "filters[0] and filters[2] both apply a label"},
		{"label nested in two chain children", Chain(Interleave(Label("a")), Chain(Pass(), Label("b"))), "both apply a label"},
		{"a predicate's label counts", Chain(Label("a"), Condition(Label("p"), Pass(), nil)), "both apply a label"},
		{"label empty", Label(""), "apply_label_transformer must match RE2([a-z0-9\\-]+)"},
		{"label upper case", Label("A"), "is not a label"},
		{"label underscore", Label("a_b"), "is not a label"},
		{"label 16 characters", Label("abcdefghij-12345"), "at most 15"},
		{"sink in predicate", Condition(Sink(), Pass(), nil), "filter.predicate (sink): a sink cannot be used within a condition"},
		{"sink in true branch", Condition(Pass(), Chain(Pass(), Sink()), nil), "filter.true.filters[1] (sink)"},
		{"sink in false branch", Interleave(Condition(Pass(), nil, Interleave(Sink()))), "(sink): a sink cannot"},
		{"sample 0", RowSample(0), "between 0.0 and 1.0"},
		{"sample 1", RowSample(1), "between 0.0 and 1.0"},
		{"sample negative", RowSample(-0.5), "between 0.0 and 1.0"},
		{"sample NaN", RowSample(math.NaN()), "between 0.0 and 1.0"},
		{"family regex with colon", FamilyRegex("a:b|c"), "contains ':'"},
		{"empty row key regex", RowKeyRegex(""), "Regex is empty"},
		{"stray label", &Filter{Kind: KindSink, Label: "x"}, "field Label is set"},
		{"stray probability", &Filter{Kind: KindPass, Probability: 0.5}, "field Probability is set"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.f)
			if err == nil || !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Compile(%s) = %v; want an invalid-argument error containing %q", tc.f, err, tc.wantErr)
			}
		})
	}
	for _, f := range []*Filter{
		Interleave(Label("a"), Label("b"), Chain(Label("c"), Pass())),
		Chain(Interleave(Label("a"), Label("b")), Family("a"), Sink()),
		Condition(Label("p"), Label("t"), Label("f")),
		Chain(Pass(), Condition(Pass(), Label("a"), nil)),
		RowSample(math.SmallestNonzeroFloat64),
		RowSample(math.Nextafter(1, 0)),
		Interleave(Sink(), Chain(Family("a"), Sink())),
		TimestampRange(10, 5),
	} {
		if _, err := Compile(f); err != nil {
			t.Errorf("Compile(%s) = %v, want it valid", f, err)
		}
	}
}

func TestCheckBigtable(t *testing.T) {
	deep := Pass()
	for range BigtableMaxDepth {
		deep = Chain(deep, Pass())
	}
	bad := []struct {
		f       *Filter
		wantErr string
	}{
		{Chain(Pass(), Condition(Pass(), Chain(Family("a")), nil)), "filter.filters[1].true.filters[0] (family)"},
		{QualifierRange("", nil, nil), "needs a family_name"},
		{RowKeyPrefix([]byte("a")), "no row_key_prefix filter"},
		{Interleave(Pass(), Family("a")), "filter.filters[1] (family): Bigtable has no family filter"},
		{deep, "more than 20 deep"},
	}
	for _, tc := range bad {
		if _, err := Compile(tc.f); err != nil {
			t.Fatalf("Compile(%s): %v", tc.f, err)
		}
		err := CheckBigtable(tc.f)
		if !errors.Is(err, cell.ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("CheckBigtable(%s) = %v, want an error containing %q", tc.f, err, tc.wantErr)
		}
	}
	ok := Pass()
	for range BigtableMaxDepth - 1 {
		ok = Chain(ok, Pass())
	}
	for _, f := range []*Filter{nil, ok, Chain(), Interleave(Pass()), Chain(FamilyRegex("a"), QualifierRange("a", nil, nil), Interleave(Sink(), Label("x")), RowSample(0.5)),
		Condition(ValueRegex("x"), nil, nil)} {
		if err := CheckBigtable(f); err != nil {
			t.Errorf("CheckBigtable(%s) = %v, want nil", f, err)
		}
	}
}
