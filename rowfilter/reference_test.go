package rowfilter

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// A reference interpreter of RowFilter, written from Bigtable's
// documentation the plain way (no hints, no sharing, no fast paths), and
// a randomized test that compares Compile+Apply with it.
//
// Random draws: each RowSample draws one number each time it is given a
// non-empty row, in evaluation order (chain and interleave children left
// to right, a condition's predicate before its branch).

type refEval struct {
	row  []byte
	rand func() float64
	sunk []cell.Cell
}

// refApply runs the reference: the root's output pooled with every sink's.
func refApply(f *Filter, row []byte, in []cell.Cell, draw func() float64) []cell.Cell {
	if f == nil {
		return in
	}
	e := &refEval{row: row, rand: draw}
	out := e.eval(f, in)
	all := append(append([]cell.Cell(nil), out...), e.sunk...)
	refSort(all)
	if len(all) == 0 {
		return nil
	}
	return all
}

// refSort orders cells by family, qualifier, then newest first; equal
// cells keep their order.
func refSort(cs []cell.Cell) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Family != b.Family {
			return a.Family < b.Family
		}
		if c := bytes.Compare(a.Qualifier, b.Qualifier); c != 0 {
			return c < 0
		}
		return a.Timestamp > b.Timestamp
	})
}

func (e *refEval) eval(f *Filter, in []cell.Cell) []cell.Cell {
	if len(in) == 0 {
		return nil
	}
	each := func(ok func(c cell.Cell) bool) []cell.Cell {
		var out []cell.Cell
		for _, c := range in {
			if ok(c) {
				out = append(out, c)
			}
		}
		return out
	}
	switch f.Kind {
	case KindPass:
		return in
	case KindBlock:
		return nil
	case KindChain:
		for _, c := range f.Filters {
			in = e.eval(c, in)
		}
		return in
	case KindInterleave:
		var out []cell.Cell
		for _, c := range f.Filters {
			out = append(out, e.eval(c, in)...)
		}
		refSort(out)
		return out
	case KindCondition:
		if len(e.eval(f.Predicate, in)) > 0 {
			if f.True == nil {
				return nil
			}
			return e.eval(f.True, in)
		}
		if f.False == nil {
			return nil
		}
		return e.eval(f.False, in)
	case KindSink:
		e.sunk = append(e.sunk, in...)
		return nil
	case KindRowSample:
		if e.rand() < f.Probability {
			return in
		}
		return nil
	case KindRowKeyRegex:
		return each(func(cell.Cell) bool { return refMatch(f.Regex, e.row) })
	case KindRowKeyPrefix:
		return each(func(cell.Cell) bool { return bytes.HasPrefix(e.row, f.Prefix) })
	case KindFamily:
		return each(func(c cell.Cell) bool { return c.Family == f.Family })
	case KindFamilyRegex:
		return each(func(c cell.Cell) bool { return refMatch(f.Regex, []byte(c.Family)) })
	case KindQualifierRegex:
		return each(func(c cell.Cell) bool { return refMatch(f.Regex, c.Qualifier) })
	case KindQualifierRange:
		return each(func(c cell.Cell) bool { return (f.Family == "" || f.Family == c.Family) && refInRange(f, c.Qualifier) })
	case KindTimestampRange:
		return each(func(c cell.Cell) bool {
			return c.Timestamp >= f.TimeStart && (f.TimeEnd == 0 || c.Timestamp < f.TimeEnd)
		})
	case KindValueRegex:
		return each(func(c cell.Cell) bool { return refMatch(f.Regex, c.Value) })
	case KindValueRange:
		return each(func(c cell.Cell) bool { return refInRange(f, c.Value) })
	case KindCellsPerRowLimit:
		if len(in) > f.N {
			return in[:f.N]
		}
		return in
	case KindCellsPerRowOffset:
		if len(in) > f.N {
			return in[f.N:]
		}
		return nil
	case KindCellsPerColumnLimit:
		seen := map[string]int{}
		return each(func(c cell.Cell) bool {
			k := c.Family + ":" + string(c.Qualifier)
			seen[k]++
			return seen[k] <= f.N
		})
	case KindStripValue:
		var out []cell.Cell
		for _, c := range in {
			c.Value = nil
			out = append(out, c)
		}
		return out
	case KindLabel:
		var out []cell.Cell
		for _, c := range in {
			c.Labels = append(append([]string(nil), c.Labels...), f.Label)
			out = append(out, c)
		}
		return out
	}
	panic("reference: unknown kind " + f.Kind.String())
}

// refMatch matches the whole input. The random patterns and data are
// ASCII, where Latin-1 and UTF-8 agree; \C is any byte.
func refMatch(pattern string, in []byte) bool {
	re := regexp.MustCompile(`^(?:` + strings.ReplaceAll(pattern, `\C`, `(?s:.)`) + `)$`)
	return re.Match(in)
}

// refInRange: a nil Start is "" closed; a nil End is no bound.
func refInRange(f *Filter, v []byte) bool {
	lo := bytes.Compare(v, f.Start)
	if lo < 0 || lo == 0 && f.StartOpen {
		return false
	}
	if f.End == nil {
		return true
	}
	hi := bytes.Compare(v, f.End)
	return hi < 0 || hi == 0 && !f.EndOpen
}

// refValidate checks the rules Bigtable documents for the new filters, for
// the trees the wild generator builds.
func refValidate(f *Filter, inCondition bool) error {
	if f == nil {
		return nil
	}
	switch f.Kind {
	case KindSink:
		if inCondition {
			return errors.New("sink in condition")
		}
	case KindLabel:
		if !regexp.MustCompile(`^[a-z0-9\-]{1,15}$`).MatchString(f.Label) {
			return errors.New("bad label")
		}
	case KindRowSample:
		if f.Probability <= 0 || f.Probability >= 1 {
			return errors.New("bad probability")
		}
	case KindChain:
		labelled := 0
		for _, c := range f.Filters {
			if hasKind(c, KindLabel) {
				labelled++
			}
		}
		if labelled > 1 {
			return errors.New("two labelled chain children")
		}
	}
	for _, c := range f.Filters {
		if err := refValidate(c, inCondition); err != nil {
			return err
		}
	}
	for _, c := range []*Filter{f.Predicate, f.True, f.False} {
		if err := refValidate(c, true); err != nil {
			return err
		}
	}
	return nil
}

func hasKind(f *Filter, k Kind) bool {
	if f == nil {
		return false
	}
	if f.Kind == k {
		return true
	}
	for _, c := range append(append([]*Filter(nil), f.Filters...), f.Predicate, f.True, f.False) {
		if hasKind(c, k) {
			return true
		}
	}
	return false
}

// seqRand is a replayable stream of draws.
func seqRand(seed uint64) func() float64 {
	r := rand.New(rand.NewPCG(seed, 42))
	return r.Float64
}

// TestMatchesReference compares Apply with the reference interpreter on
// random filter trees of every kind (row samples drawing from the same
// seeded stream on both sides) and random rows; it also checks that
// Compile accepts exactly the trees the reference's rules accept.
func TestMatchesReference(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	iterations := 4000
	if testing.Short() {
		iterations = 800
	}
	var st refStats
	for i := range iterations {
		checkReference(t, r, i, &st)
	}
	t.Logf("%d compared rows (%d non-empty, %d with sunk cells, %d with labels); %d trees rejected",
		st.rows, st.nonEmpty, st.sunk, st.labels, st.rejected)
	if st.nonEmpty < iterations/4 || st.sunk < iterations/50 || st.labels < iterations/50 || st.rejected < iterations/50 {
		t.Errorf("generator too weak")
	}
}

// FuzzReference runs the reference comparison on trees and rows generated
// from the fuzzer's seeds.
func FuzzReference(f *testing.F) {
	for i := uint64(1); i <= 8; i++ {
		f.Add(i, i*104729)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		checkReference(t, rand.New(rand.NewPCG(a, b)), 0, &refStats{})
	})
}

type refStats struct{ rows, nonEmpty, sunk, labels, rejected int }

func checkReference(t *testing.T, r *rand.Rand, i int, st *refStats) {
	t.Helper()
	o := validGen
	o.wild = r.IntN(3) == 0
	f := randFilterOpts(r, 1, o)
	drawSeed := r.Uint64()
	c, err := CompileWith(f, Options{Rand: seqRand(drawSeed)})
	if verr := refValidate(f, false); (err == nil) != (verr == nil) {
		t.Fatalf("iteration %d: Compile(%s) = %v; the reference says %v", i, f, err, verr)
	}
	if err != nil {
		if !errors.Is(err, cell.ErrInvalid) {
			t.Fatalf("iteration %d: Compile error %v does not wrap cell.ErrInvalid", i, err)
		}
		st.rejected++
		return
	}
	refDraw := seqRand(drawSeed)
	for range 3 {
		row, cells := randRow(r)
		got := c.Apply(row, cells)
		want := refApply(f, row, cells, refDraw)
		st.rows++
		if show(got) != show(want) {
			t.Fatalf("iteration %d: filter %s\nrow %q %s\n got %s\nwant %s", i, f, row, show(cells), show(got), show(want))
		}
		if len(got) > 0 {
			st.nonEmpty++
		}
		if hasKind(f, KindSink) && len(got) > 0 {
			st.sunk++
		}
		for _, c := range got {
			if len(c.Labels) > 1 {
				t.Fatalf("iteration %d: filter %s gave a cell two labels: %s", i, f, show(got))
			}
			if len(c.Labels) > 0 {
				st.labels++
				break
			}
		}
	}
}
