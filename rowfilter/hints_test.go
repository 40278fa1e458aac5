package rowfilter

import (
	"flag"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

var seedFlag = flag.Uint64("seed", 0, "seed for randomized tests (0: from the clock)")

func TestFamiliesHint(t *testing.T) {
	tests := []struct {
		name string
		f    *Filter
		want []string // nil: unrestricted
	}{
		{"nil", nil, nil},
		{"pass", Pass(), nil},
		{"block", Block(), []string{}},
		{"family", Family("a"), []string{"a"}},
		{"family regex literal", FamilyRegex("a|b"), []string{"a", "b"}},
		{"family regex open", FamilyRegex("a.*"), nil},
		{"qualifier range with family", QualifierRange("a", nil, nil), []string{"a"}},
		{"qualifier range any family", QualifierRange("", nil, nil), nil},
		{"chain family then limit", Chain(Family("a"), CellsPerRowLimit(1)), []string{"a"}},
		{"chain commuting filters then family", Chain(QualifierRegex("x"), CellsPerColumnLimit(1), StripValue(), Family("a")), []string{"a"}},
		{"chain limit then family", Chain(CellsPerRowLimit(1), Family("a")), nil},
		{"chain offset then block", Chain(CellsPerRowOffset(1), Block()), []string{}},
		{"interleave", Interleave(Family("a"), FamilyRegex("b|c")), []string{"a", "b", "c"}},
		{"interleave with open branch", Interleave(Family("a"), QualifierRegex("x")), nil},
		{"condition", Condition(Family("a"), Family("b"), nil), []string{"a", "b"}},
		{"condition predicate open", Condition(QualifierRegex("x"), Family("b"), Family("c")), nil},
		{"condition in chain after family", Chain(Family("a"), Condition(QualifierRegex("x"), Pass(), nil)), []string{"a"}},
		{"chain condition then family", Chain(Condition(QualifierRegex("x"), Pass(), nil), Family("a")), nil},
		{"sink needs everything", Sink(), nil},
		{"sink before family", Chain(Sink(), Family("a")), nil},
		{"sink before block", Chain(Sink(), Block()), nil},
		{"sink under family", Chain(Family("a"), Sink()), []string{"a"}},
		{"sink after commuting filter before family", Chain(QualifierRegex("x"), Interleave(Pass(), Sink()), Family("a")), nil},
		{"sunk family in interleave", Interleave(Family("a"), Chain(Family("b"), Sink())), []string{"a", "b"}},
		{"chain with sunk branch then family", Chain(Chain(Family("b"), Sink()), Family("a")), []string{"b"}},
		{"label and sample commute", Chain(Label("l"), RowSample(0.5), Family("a")), []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			names, restricted := c.Families()
			if restricted != (tc.want != nil) {
				t.Fatalf("Families() = %v, %v; want %v", names, restricted, tc.want)
			}
			if got := slices.Sorted(maps.Keys(names)); restricted && !slices.Equal(got, tc.want) {
				t.Fatalf("Families() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTimeRangeHint(t *testing.T) {
	type tr struct{ start, end int64 }
	tests := []struct {
		name string
		f    *Filter
		want *tr // nil: unrestricted
	}{
		{"nil", nil, nil},
		{"range", TimestampRange(5, 10), &tr{5, 10}},
		{"unbounded", TimestampRange(5, 0), &tr{5, 0}},
		{"empty range reports no restriction", TimestampRange(5, 5), nil},
		{"range then versions", Chain(TimestampRange(5, 10), CellsPerColumnLimit(1)), &tr{5, 10}},
		{"versions then range", Chain(CellsPerColumnLimit(1), TimestampRange(5, 10)), nil},
		{"family then range", Chain(Family("a"), TimestampRange(1, 2)), &tr{1, 2}},
		{"interleave hull", Interleave(TimestampRange(5, 10), TimestampRange(20, 30)), &tr{5, 30}},
		{"interleave unbounded", Interleave(TimestampRange(5, 10), TimestampRange(20, 0)), &tr{5, 0}},
		{"interleave open", Interleave(TimestampRange(5, 10), Family("a")), nil},
		{"interleave with block", Interleave(TimestampRange(5, 10), Block()), &tr{5, 10}},
		{"condition", Condition(TimestampRange(1, 3), TimestampRange(2, 4), nil), &tr{1, 4}},
		{"sink before range", Chain(Sink(), TimestampRange(1, 2)), nil},
		{"sink before empty range", Chain(Interleave(Sink()), TimestampRange(2, 2)), nil},
		{"range before sink", Chain(TimestampRange(1, 2), Sink()), &tr{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			s, e, restricted := c.TimeRange()
			if restricted != (tc.want != nil) || (restricted && (tr{s, e}) != *tc.want) {
				t.Fatalf("TimeRange() = %d, %d, %v; want %v", s, e, restricted, tc.want)
			}
		})
	}
}

func TestRowMayMatch(t *testing.T) {
	tests := []struct {
		f    *Filter
		row  string
		want bool
	}{
		{nil, "r", true},
		{Block(), "r", false},
		{Chain(RowKeyPrefix([]byte("a")), Family("x")), "b", false},
		{Chain(RowKeyPrefix([]byte("a")), Family("x")), "ab", true},
		{Chain(Family("x"), RowKeyRegex("a+")), "aab", false},
		{Interleave(RowKeyPrefix([]byte("a")), RowKeyRegex("b.*")), "c", false},
		{Interleave(RowKeyPrefix([]byte("a")), RowKeyRegex("b.*")), "bc", true},
		{Interleave(), "a", false},
		{Condition(RowKeyPrefix([]byte("a")), Pass(), nil), "b", false},
		{Condition(RowKeyPrefix([]byte("a")), nil, Pass()), "b", true},
		{Condition(Pass(), nil, nil), "b", false},
		{TimestampRange(3, 3), "b", false},
		{Chain(CellsPerRowLimit(1), QualifierRegex("x")), "b", true},
		{Sink(), "b", true},
		{Chain(Sink(), RowKeyPrefix([]byte("a"))), "b", true},
		{Chain(RowKeyPrefix([]byte("a")), Sink()), "b", false},
		{Chain(Interleave(Block(), Sink()), Block()), "b", true},
		{Chain(Block(), Sink()), "b", false},
		{Interleave(Chain(RowKeyPrefix([]byte("a")), Sink()), RowKeyPrefix([]byte("c"))), "b", false},
	}
	for i, tc := range tests {
		c, err := Compile(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.RowMayMatch([]byte(tc.row)); got != tc.want {
			t.Errorf("case %d: RowMayMatch(%q) = %v, want %v", i, tc.row, got, tc.want)
		}
	}
}

// TestHintsRandomized checks the planner hints against Apply: for random
// filters and rows, whatever a hint lets the engine leave out must not
// change Apply's result.
func TestHintsRandomized(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	iterations := 3000
	if testing.Short() {
		iterations = 500
	}
	var st hintStats
	for i := 0; i < iterations; i++ {
		checkHints(t, r, i, &st)
	}
	t.Logf("rows: %d families-restricted, %d time-restricted, %d skipped by row key, %d non-empty of %d",
		st.famRestricted, st.timeRestricted, st.rowSkipped, st.nonEmpty, 3*iterations)
	// The test means something only if the hints often restrict.
	if min(st.famRestricted, st.timeRestricted, st.rowSkipped, st.nonEmpty) < iterations/20 {
		t.Errorf("generator too weak: too few restricted hints or non-empty results")
	}
}

// FuzzHints runs the randomized hint check on filters and rows generated
// from the fuzzer's seeds.
func FuzzHints(f *testing.F) {
	for i := uint64(1); i <= 8; i++ {
		f.Add(i, i*7919)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkHints(t, rand.New(rand.NewPCG(a, b)), 0, &hintStats{})
	})
}

type hintStats struct{ famRestricted, timeRestricted, rowSkipped, nonEmpty int }

// checkHints builds a random filter and three random rows, and checks that
// no hint changes what Apply returns.
func checkHints(t *testing.T, r *rand.Rand, i int, st *hintStats) {
	t.Helper()
	f := randFilter(r, 1)
	// Every RowSample in the row draws the same number, so that what a
	// hint leaves out cannot change a decision by shifting the draws.
	var u float64
	c, err := CompileWith(f, Options{Rand: func() float64 { return u }})
	if err != nil {
		t.Fatalf("iteration %d: random filter does not compile: %v", i, err)
	}
	names, famOK := c.Families()
	start, end, timeOK := c.TimeRange()
	for j := 0; j < 3; j++ {
		row, cells := randRow(r)
		u = r.Float64()
		full := c.Apply(row, cells)
		if len(full) > 0 {
			st.nonEmpty++
		}
		fail := func(what string, got []cell.Cell) {
			t.Helper()
			t.Fatalf("iteration %d: %s changes the result\nfilter %s\nrow %q %s\nfull    %s\nrestricted %s",
				i, what, f, row, show(cells), show(full), show(got))
		}
		if !slices.IsSortedFunc(full, func(a, b cell.Cell) int { return cell.Compare(&a, &b) }) {
			fail("nothing (output out of read order)", full)
		}
		if !c.RowMayMatch(row) {
			st.rowSkipped++
			if len(full) > 0 {
				fail("RowMayMatch=false", nil)
			}
		}
		if famOK {
			st.famRestricted++
			byFam := keepCells(cells, func(c cell.Cell) bool { return names[c.Family] })
			if got := c.Apply(row, byFam); show(got) != show(full) {
				fail("Families()", got)
			}
		}
		if timeOK {
			st.timeRestricted++
			byTime := keepCells(cells, func(c cell.Cell) bool { return c.Timestamp >= start && (end == 0 || c.Timestamp < end) })
			if got := c.Apply(row, byTime); show(got) != show(full) {
				fail("TimeRange()", got)
			}
			if famOK {
				both := keepCells(byTime, func(c cell.Cell) bool { return names[c.Family] })
				if got := c.Apply(row, both); show(got) != show(full) {
					fail("Families() with TimeRange()", got)
				}
			}
		}
	}
}

func keepCells(cells []cell.Cell, ok func(cell.Cell) bool) []cell.Cell {
	var out []cell.Cell
	for _, c := range cells {
		if ok(c) {
			out = append(out, c)
		}
	}
	return out
}

func pickOne[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

var (
	randFamilies   = []string{"a", "b", "c"}
	randQualifiers = []string{"", "p", "q", "r"}
	randValues     = []string{"", "v1", "v2", "w"}
)

// randRow returns a row with a random subset of families, columns and
// versions, in read order.
func randRow(r *rand.Rand) ([]byte, []cell.Cell) {
	row := []byte(pickOne(r, "row1", "row2", "xrow"))
	var cells []cell.Cell
	for _, fam := range randFamilies {
		if r.IntN(4) == 0 {
			continue
		}
		for _, q := range randQualifiers {
			if r.IntN(2) == 0 {
				continue
			}
			// Distinct timestamps, newest first.
			ts := r.Perm(20)[:1+r.IntN(4)]
			slices.Sort(ts)
			slices.Reverse(ts)
			for _, t := range ts {
				cells = append(cells, cell.Cell{Row: row, Family: fam, Qualifier: []byte(q),
					Timestamp: int64(t), Value: []byte(pickOne(r, randValues...))})
			}
		}
	}
	return row, cells
}

func randBytes(r *rand.Rand) []byte {
	if r.IntN(4) == 0 {
		return nil
	}
	return []byte(pickOne(r, "", "p", "q", "r", "v1", "v2", "w", "x"))
}

// genOpts says what randFilter may build.
type genOpts struct {
	labels bool // a Label may appear (Compile allows one per chain child)
	sinks  bool // a Sink may appear (not inside a Condition)
	sample bool // a RowSample may appear
	wild   bool // also build what Compile must reject (see refValidate)
}

// validGen builds every kind, always valid.
var validGen = genOpts{labels: true, sinks: true, sample: true}

func randFilter(r *rand.Rand, depth int) *Filter { return randFilterOpts(r, depth, validGen) }

func randFilterOpts(r *rand.Rand, depth int, o genOpts) *Filter {
	if depth < 4 && r.IntN(5) < 2 {
		switch r.IntN(3) {
		case 0:
			// Only one child of a chain may hold a label.
			fs := make([]*Filter, r.IntN(4))
			labelled := r.IntN(len(fs) + 1)
			for i := range fs {
				co := o
				co.labels = o.labels && (i == labelled || o.wild && r.IntN(3) == 0)
				fs[i] = randFilterOpts(r, depth+1, co)
			}
			return Chain(fs...)
		case 1:
			fs := make([]*Filter, r.IntN(4))
			for i := range fs {
				fs[i] = randFilterOpts(r, depth+1, o)
			}
			return Interleave(fs...)
		default:
			co := o
			co.sinks = o.wild && r.IntN(3) == 0
			maybe := func() *Filter {
				if r.IntN(4) == 0 {
					return nil
				}
				return randFilterOpts(r, depth+1, co)
			}
			return Condition(randFilterOpts(r, depth+1, co), maybe(), maybe())
		}
	}
	if o.wild && r.IntN(16) == 0 {
		return pickOne(r, Label(""), Label("UP"), Label("a_b"), Label("sixteen-chars-xx"), RowSample(0), RowSample(1), RowSample(-0.5),
			Chain(Label("l1"), Pass(), Interleave(Label("l2"))), Condition(Sink(), Pass(), nil))
	}
	switch r.IntN(21) {
	case 0:
		return Pass()
	case 1:
		return Block()
	case 2:
		return RowKeyRegex(pickOne(r, "row.*", "row1", ".*row", `x\C*`))
	case 3:
		return RowKeyPrefix([]byte(pickOne(r, "", "r", "row2", "x")))
	case 4:
		return FamilyRegex(pickOne(r, "a|b", "c", "[ab]", ".*", "a.*", "d"))
	case 5, 6:
		return Family(pickOne(r, randFamilies...))
	case 7:
		return QualifierRegex(pickOne(r, "", "p|q", "r", ".*"))
	case 8:
		return &Filter{Kind: KindQualifierRange, Family: pickOne(r, "", "a", "b"), Start: randBytes(r), End: randBytes(r),
			StartOpen: r.IntN(2) == 0, EndOpen: r.IntN(2) == 0}
	case 9, 10:
		start := int64(r.IntN(20))
		return TimestampRange(start, pickOne(r, 0, start+1+int64(r.IntN(10)), max(0, start-int64(r.IntN(3)))))
	case 11:
		return ValueRegex(pickOne(r, "v.", "w", ""))
	case 12:
		return &Filter{Kind: KindValueRange, Start: randBytes(r), End: randBytes(r), StartOpen: r.IntN(2) == 0, EndOpen: r.IntN(2) == 0}
	case 13:
		return CellsPerRowLimit(1 + r.IntN(5))
	case 14:
		return CellsPerRowOffset(r.IntN(5))
	case 15:
		return CellsPerColumnLimit(1 + r.IntN(3))
	case 16, 17:
		if o.sinks {
			return Sink()
		}
	case 18:
		if o.labels {
			return Label(pickOne(r, "l1", "l2", "x-y"))
		}
	case 19:
		if o.sample {
			return RowSample(pickOne(r, 0.25, 0.5, 0.75))
		}
	}
	return StripValue()
}
