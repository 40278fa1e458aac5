package tablet

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

// aggOptions is testOptions with a bytes family "a" and the aggregate
// families "sum", "min" and "max" (sum keeping 2 versions).
func aggOptions(dir string) Options {
	o := testOptions(dir)
	o.Families = []families.Family{
		{Name: "a"},
		{Name: "max", ValueType: families.Max},
		{Name: "min", ValueType: families.Min, Compression: families.CompressionSnappy},
		{Name: "sum", ValueType: families.Sum, MaxVersions: 2},
	}
	return o
}

func add(fam, q string, ts, n int64) cell.Mutation {
	return cell.Mutation{Kind: cell.AddToCell, Family: fam, Qualifier: []byte(q), Timestamp: ts, Value: cell.AggregateInput(n)}
}

func mergeTo(fam, q string, ts, n int64) cell.Mutation {
	return cell.Mutation{Kind: cell.MergeToCell, Family: fam, Qualifier: []byte(q), Timestamp: ts, Value: cell.AggregateInput(n)}
}

// renderAgg prints cells as "fam:q@ts=N", N the int64 of 8-byte values
// (other values as they are).
func renderAgg(cells []cell.Cell) string {
	var parts []string
	for _, c := range cells {
		v := string(c.Value)
		if n, ok := families.DecodeAggregate(c.Value); ok {
			v = fmt.Sprint(n)
		}
		parts = append(parts, fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp, v))
	}
	return strings.Join(parts, " ")
}

func readAgg(t testing.TB, tb *Tablet, row string) string {
	t.Helper()
	cells, err := tb.ReadRow(bg, []byte(row), nil)
	if err != nil {
		t.Fatalf("ReadRow(%q): %v", row, err)
	}
	return renderAgg(cells)
}

// stage is where a test moves the tablet's data between writes.
type stage int

const (
	inMemtable stage = iota // nothing: reads merge memtable entries
	flushed                 // Flush after every write: reads merge files
	compacted               // Flush and Compact(major) after every write
	replayed                // Close and reopen after every write: replayed logs
)

func (s stage) String() string { return [...]string{"memtable", "flushed", "compacted", "replayed"}[s] }

// stepper applies writes to a tablet and moves its data to a stage after
// each one.
type stepper struct {
	t    *testing.T
	tb   *Tablet
	opts Options
	st   stage
}

func newStepper(t *testing.T, st stage) *stepper {
	opts := aggOptions(t.TempDir())
	s := &stepper{t: t, opts: opts, st: st}
	s.tb = openTablet(t, opts)
	return s
}

func (s *stepper) apply(row string, muts ...cell.Mutation) {
	s.t.Helper()
	apply(s.t, s.tb, row, muts...)
	switch s.st {
	case flushed, compacted:
		if err := s.tb.Flush(bg); err != nil {
			s.t.Fatal(err)
		}
		if s.st == compacted {
			if err := s.tb.Compact(bg, true); err != nil {
				s.t.Fatal(err)
			}
		}
	case replayed:
		if err := s.tb.Close(); err != nil {
			s.t.Fatal(err)
		}
		s.opts.Create = false
		s.tb = openTablet(s.t, s.opts)
	}
}

func TestAggregateCellsMerge(t *testing.T) {
	cases := []struct {
		name string
		muts [][]cell.Mutation // one Apply each
		want string
	}{
		{"sum of one timestamp", [][]cell.Mutation{{add("sum", "q", 10, 3)}, {add("sum", "q", 10, 4)}, {mergeTo("sum", "q", 10, -10)}}, "sum:q@10=-3"},
		{"min of one timestamp", [][]cell.Mutation{{add("min", "q", 10, 3)}, {add("min", "q", 10, -4)}, {mergeTo("min", "q", 10, 8)}}, "min:q@10=-4"},
		{"max of one timestamp", [][]cell.Mutation{{add("max", "q", 10, 3)}, {add("max", "q", 10, -4)}, {mergeTo("max", "q", 10, 8)}}, "max:q@10=8"},
		{"different timestamps stay apart", [][]cell.Mutation{{add("sum", "q", 10, 1)}, {add("sum", "q", 20, 2)}, {add("sum", "q", 10, 5)}}, "sum:q@20=2 sum:q@10=6"},
		{"columns and families stay apart", [][]cell.Mutation{{add("sum", "q", 1, 1), add("sum", "p", 1, 2), add("max", "q", 1, 3)}, {add("sum", "q", 1, 1)}},
			"max:q@1=3 sum:p@1=2 sum:q@1=2"},
		{"sum wraps", [][]cell.Mutation{{add("sum", "q", 1, 1<<63-1)}, {add("sum", "q", 1, 2)}}, "sum:q@1=-9223372036854775807"},
		{"several inputs of one request", [][]cell.Mutation{{add("sum", "q", 1, 1), add("sum", "q", 1, 2), add("sum", "q", 2, 5), mergeTo("sum", "q", 1, 4)}}, "sum:q@2=5 sum:q@1=7"},
		{"one request: add, delete, add", [][]cell.Mutation{{add("sum", "q", 1, 1), add("sum", "q", 1, 2), delCol("sum", "q", 0, 0), add("sum", "q", 1, 10), add("sum", "q", 1, 20)}}, "sum:q@1=30"},
		{"one request: a range delete closes only what it covers", [][]cell.Mutation{{add("sum", "q", 1, 1), add("sum", "q", 5, 2), delCol("sum", "q", 3, 0), add("sum", "q", 1, 10), add("sum", "q", 5, 20)}}, "sum:q@5=20 sum:q@1=11"},
		{"one request: family delete", [][]cell.Mutation{{add("sum", "q", 1, 1), add("min", "q", 1, 1), delFam("sum"), add("sum", "q", 1, 7)}}, "min:q@1=1 sum:q@1=7"},
		{"one request: row delete", [][]cell.Mutation{{add("sum", "q", 1, 1), add("max", "q", 1, 1), delRow(), add("sum", "q", 1, 7)}}, "sum:q@1=7"},
		{"a delete removes earlier inputs only", [][]cell.Mutation{{add("sum", "q", 1, 1)}, {add("sum", "q", 1, 2)}, {delCol("sum", "q", 0, 0)}, {add("sum", "q", 1, 5)}, {add("sum", "q", 1, 6)}}, "sum:q@1=11"},
		{"a range delete between inputs", [][]cell.Mutation{{add("sum", "q", 1, 1), add("sum", "q", 9, 1)}, {delCol("sum", "q", 5, 0)}, {add("sum", "q", 1, 2), add("sum", "q", 9, 2)}}, "sum:q@9=2 sum:q@1=3"},
		{"family delete between inputs", [][]cell.Mutation{{add("min", "q", 1, -5)}, {delFam("min")}, {add("min", "q", 1, 5)}}, "min:q@1=5"},
		{"row delete between inputs", [][]cell.Mutation{{add("max", "q", 1, 50)}, {delRow()}, {add("max", "q", 1, 5)}, {add("max", "q", 1, 4)}}, "max:q@1=5"},
		{"versions count merged cells", [][]cell.Mutation{{add("sum", "q", 1, 1)}, {add("sum", "q", 2, 1)}, {add("sum", "q", 3, 1)}, {add("sum", "q", 3, 1)}, {add("sum", "q", 2, 1)}}, "sum:q@3=2 sum:q@2=2"},
		{"a deleted newest version brings the next back", [][]cell.Mutation{{add("sum", "q", 1, 1)}, {add("sum", "q", 2, 1)}, {add("sum", "q", 3, 1)}, {delCol("sum", "q", 3, 4)}}, "sum:q@2=1 sum:q@1=1"},
	}
	for _, c := range cases {
		for _, st := range []stage{inMemtable, flushed, compacted, replayed} {
			t.Run(fmt.Sprintf("%s/%v", c.name, st), func(t *testing.T) {
				if c.name == "a deleted newest version brings the next back" && st == compacted {
					// A major compaction drops what GC condemns at the
					// time (the @1 cell), as for any family.
					t.Skip()
				}
				s := newStepper(t, st)
				for _, m := range c.muts {
					s.apply("r", m...)
				}
				if got := readAgg(t, s.tb, "r"); got != c.want {
					t.Fatalf("got %q, want %q", got, c.want)
				}
				// A scan assembles the same cells as a point read.
				if got := scan(t, s.tb, ReadOptions{}); got != "" && !strings.HasPrefix(got, "r{") {
					t.Fatalf("scan: %q", got)
				}
			})
		}
	}
}

func TestAggregateFlushAndCompactionStoreMergedCells(t *testing.T) {
	tb := openTablet(t, aggOptions(t.TempDir()))
	cellsIn := func(fam string) (files int, cells uint64) {
		v := tb.head()
		for _, f := range v.files[fam] {
			files++
			cells += f.ref.NumCells
		}
		return files, cells
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 100; i++ {
			apply(t, tb, "r", add("sum", "q", 1, 1), add("sum", "q", int64(2+i%2), 1))
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		// 200 inputs into 3 cells: the new file holds 3 cells.
		if files, cells := cellsIn("sum"); files != round+1 || cells != uint64(3*(round+1)) {
			t.Fatalf("round %d: %d files of %d cells, want %d files of %d", round, files, cells, round+1, 3*(round+1))
		}
	}
	want := "sum:q@3=150 sum:q@2=150" // versions=2 hides @1
	if got := readAgg(t, tb, "r"); got != want {
		t.Fatalf("after flushes: %q, want %q", got, want)
	}
	if err := tb.Compact(bg, false); err != nil { // all 3 files: a major one
		t.Fatal(err)
	}
	if files, cells := cellsIn("sum"); files != 1 || cells != 2 {
		t.Fatalf("after compaction: %d files of %d cells, want 1 of 2 (condemned @1 dropped)", files, cells)
	}
	if got := readAgg(t, tb, "r"); got != want {
		t.Fatalf("after compaction: %q, want %q", got, want)
	}
}

// TestAggregateMergingCompactionKeepsPartsAmidTombstones checks the rule of
// tombstonesAmid: a merging compaction writes one cell per (column,
// timestamp) unless a file left out holds tombstones among the inputs'
// sequence numbers, when it keeps the parts, so that tombstone still
// deletes the parts before it and not those after.
func TestAggregateMergingCompactionKeepsPartsAmidTombstones(t *testing.T) {
	f := func(minSeq, maxSeq, tombs uint64) *tableFile {
		tf := &tableFile{}
		tf.ref.MinSeq, tf.ref.MaxSeq, tf.ref.NumTombstones = minSeq, maxSeq, tombs
		return tf
	}
	in1, in2 := f(10, 19, 0), f(20, 29, 3)
	older, amid, newer, amidNoTomb := f(1, 9, 5), f(15, 15, 1), f(30, 40, 2), f(15, 15, 0)
	cases := []struct {
		files []*tableFile
		want  bool
	}{
		{[]*tableFile{in2, in1, older}, false},
		{[]*tableFile{newer, in2, in1}, false},
		{[]*tableFile{in2, amid, in1}, true},
		{[]*tableFile{in2, amidNoTomb, in1}, false},
	}
	for i, c := range cases {
		if got := tombstonesAmid(c.files, []*tableFile{in2, in1}); got != c.want {
			t.Errorf("case %d: tombstonesAmid = %v, want %v", i, got, c.want)
		}
	}

	// The assembler with keepParts: parts are emitted apart, deleted
	// parts and the tombstone's own inputs resolved as without it.
	row := []byte("r")
	entries := []rawEntry{
		{key: cell.Key{Row: row, Qualifier: []byte("q"), Timestamp: 5, Seq: 9, Kind: cell.KindDeleteColumn}, value: cell.AppendDeleteRange(nil, 0, 0)},
		{key: cell.Key{Row: row, Qualifier: []byte("q"), Timestamp: 5, Seq: 12, Kind: cell.KindSet}, value: cell.AggregateInput(4)},
		{key: cell.Key{Row: row, Qualifier: []byte("q"), Timestamp: 5, Seq: 10, Kind: cell.KindSet}, value: cell.AggregateInput(2)},
		{key: cell.Key{Row: row, Qualifier: []byte("q"), Timestamp: 5, Seq: 8, Kind: cell.KindSet}, value: cell.AggregateInput(100)}, // deleted
	}
	for _, keep := range []bool{false, true} {
		var got []string
		assembleFamily(entries, 1<<62, families.Policy{}, aggregation{vt: families.Sum, keepParts: keep}, modeMerge, func(e *rawEntry) {
			n, _ := families.DecodeAggregate(e.value)
			got = append(got, fmt.Sprintf("%v@%d=%d", e.key.Kind, e.key.Seq, n))
		})
		want := "delete-column@9=0 set@12=6"
		if keep {
			want = "delete-column@9=0 set@12=4 set@10=2"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("keepParts=%v: emitted %q, want %q", keep, strings.Join(got, " "), want)
		}
	}
}

func TestAggregateRefusals(t *testing.T) {
	tb := openTablet(t, aggOptions(t.TempDir()))
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"SetCell into sum", tb.Apply(bg, []byte("r"), []cell.Mutation{set("sum", "q", 1, "12345678")}), "aggregate (sum) family: write it with AddToCell or MergeToCell"},
		{"AddToCell into bytes", tb.Apply(bg, []byte("r"), []cell.Mutation{add("a", "q", 1, 1)}), "family a holds bytes: add-to-cell needs an aggregate family"},
		{"MergeToCell into bytes", tb.Apply(bg, []byte("r"), []cell.Mutation{mergeTo("a", "q", 1, 1)}), "merge-to-cell needs an aggregate family"},
		{"server time", tb.Apply(bg, []byte("r"), []cell.Mutation{add("sum", "q", cell.ServerTimestamp, 1)}), "the server's clock is not allowed"},
		{"short input", tb.Apply(bg, []byte("r"), []cell.Mutation{{Kind: cell.AddToCell, Family: "sum", Value: []byte{1}}}), "1-byte input"},
		{"CheckAndMutate", func() error {
			_, err := tb.CheckAndMutate(bg, []byte("r"), nil, []cell.Mutation{set("max", "q", 1, "x")}, nil)
			return err
		}(), "write it with AddToCell"},
		{"ReadModifyWrite", func() error {
			_, err := tb.ReadModifyWrite(bg, []byte("r"), []cell.ReadModifyWriteRule{{Kind: cell.Increment, Family: "sum", IncrementAmount: 1}})
			return err
		}(), "read-modify-write does not apply to it; use AddToCell"},
	} {
		if !errors.Is(c.err, cell.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want cell.ErrInvalid saying %q", c.name, c.err, c.want)
		}
	}
	// A refused request applies nothing, not even its valid mutations.
	if err := tb.Apply(bg, []byte("r"), []cell.Mutation{add("sum", "q", 1, 1), set("sum", "q", 1, "x")}); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("mixed request: %v", err)
	}
	if got := readAgg(t, tb, "r"); got != "" {
		t.Fatalf("a refused request left %q", got)
	}
	// CheckAndMutate applies AddToCell.
	if _, err := tb.CheckAndMutate(bg, []byte("r"), nil, nil, []cell.Mutation{add("sum", "q", 1, 4), add("sum", "q", 1, 4)}); err != nil {
		t.Fatal(err)
	}
	if got := readAgg(t, tb, "r"); got != "sum:q@1=8" {
		t.Fatalf("after CheckAndMutate: %q", got)
	}
}

func TestAggregateFiltersSeeMergedCells(t *testing.T) {
	tb := openTablet(t, aggOptions(t.TempDir()))
	apply(t, tb, "r", add("sum", "q", 1, 1), add("sum", "q", 2, 1))
	apply(t, tb, "r", add("sum", "q", 2, 1))
	// The newest cell per column is the merged @2, not one input of it.
	cells, err := tb.ReadRow(bg, []byte("r"), rowfilter.CellsPerColumnLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := renderAgg(cells); got != "sum:q@2=2" {
		t.Fatalf("newest cell: %q", got)
	}
}

func TestAggregateSplit(t *testing.T) {
	root := t.TempDir()
	opts := aggOptions(filepath.Join(root, "parent"))
	tb := openTablet(t, opts)
	for i := 0; i < 20; i++ {
		row := fmt.Sprintf("row%02d", i)
		apply(t, tb, row, add("sum", "q", 1, int64(i)))
		apply(t, tb, row, add("sum", "q", 1, 1), add("max", "q", 1, int64(i)))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "row03", add("sum", "q", 1, 100)) // in the memtable at the split
	left, right := filepath.Join(root, "left"), filepath.Join(root, "right")
	if err := tb.Split(bg, []byte("row10"), left, right); err != nil {
		t.Fatal(err)
	}
	lopts, ropts := aggOptions(left), aggOptions(right)
	lopts.Create, ropts.Create = false, false
	lt, rt := openTablet(t, lopts), openTablet(t, ropts)
	apply(t, lt, "row03", add("sum", "q", 1, 1000))
	apply(t, rt, "row15", add("sum", "q", 1, 1000))
	check := func(when string) {
		t.Helper()
		if got := readAgg(t, lt, "row03"); got != "max:q@1=3 sum:q@1=1104" {
			t.Fatalf("%s: left row03: %q", when, got)
		}
		if got := readAgg(t, rt, "row15"); got != "max:q@1=15 sum:q@1=1016" {
			t.Fatalf("%s: right row15: %q", when, got)
		}
	}
	check("after split")
	for _, c := range []*Tablet{lt, rt} {
		if err := c.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := c.Compact(bg, false); err != nil {
			t.Fatal(err)
		}
	}
	check("after the children's compactions")
}

func TestAggregateFamilyRetypedDropsItsCells(t *testing.T) {
	opts := aggOptions(t.TempDir())
	tb := openTablet(t, opts)
	apply(t, tb, "r", set("a", "q", 1, "12345678"), add("sum", "q", 1, 5))
	fams := aggOptions("").Families
	fams[0].ValueType = families.Sum // "a" becomes a sum family
	if err := tb.SetFamilies(fams); err != nil {
		t.Fatal(err)
	}
	if got := readAgg(t, tb, "r"); got != "sum:q@1=5" {
		t.Fatalf("after retyping a: %q (its bytes must not be read as a sum)", got)
	}
	apply(t, tb, "r", add("a", "q", 1, 2))
	if got := readAgg(t, tb, "r"); got != "a:q@1=2 sum:q@1=5" {
		t.Fatalf("after a write into the new a: %q", got)
	}
}

// TestAggregateInputsOfOneRequest applies random requests of up to 60
// mutations on one row (AddToCell and MergeToCell on few cells, SetCell
// into a bytes family, deletes among them; both normalize paths, small and
// large) as one Apply each, and compares with the reference model, which
// orders every mutation of a request. It found that a column delete
// after a set of the same request, itself after a wider delete with the
// same range start, removed the set (the deletes' merged range was used).
func TestAggregateInputsOfOneRequest(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	opts := aggOptions(t.TempDir())
	tb := openTablet(t, opts)
	model := newRefModel(opts.Families)
	aggs := []string{"max", "min", "sum"}
	for round := 0; round < 300; round++ {
		n := 1 + rng.Intn(60)
		muts := make([]cell.Mutation, n)
		for i := range muts {
			fam, q, ts := aggs[rng.Intn(3)], fmt.Sprint("q", rng.Intn(2)), int64(rng.Intn(3))
			if rng.Intn(4) == 0 { // the bytes family, with the same rules
				fam = "a"
			}
			switch k := rng.Intn(20); {
			case k < 14 && fam == "a":
				muts[i] = set(fam, q, ts, fmt.Sprint(i))
			case k < 14:
				muts[i] = add(fam, q, ts, int64(rng.Intn(21)-10))
				if k < 4 {
					muts[i].Kind = cell.MergeToCell
				}
			case k < 17:
				muts[i] = delCol(fam, q, 0, 0)
				if k > 14 {
					muts[i] = delCol(fam, q, ts, []int64{0, ts + 1, ts + 2}[rng.Intn(3)])
				}
			case k < 19:
				muts[i] = delFam(fam)
			default:
				muts[i] = delRow()
			}
		}
		apply(t, tb, "r", muts...)
		model.apply("r", muts, 0)
		if round%3 == 2 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := readAgg(t, tb, "r"), renderAgg(model.read("r", 0)); got != want {
			t.Fatalf("seed %d round %d: after %v\n got  %s\n want %s", seed, round, muts, got, want)
		}
	}
}
