package tablet

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

// scanRows returns the rows of a read, rendered "row{cells}".
func scanRows(t testing.TB, tb *Tablet, opts ReadOptions) []string {
	t.Helper()
	it, err := tb.NewRowIterator(bg, opts)
	if err != nil {
		t.Fatalf("NewRowIterator: %v", err)
	}
	var rows []string
	for it.Next() {
		rows = append(rows, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return rows
}

// TestReverseReadIsForwardReversed writes random rows (some large enough
// to span blocks) with row, family and column deletes into a memtable and
// several SSTables under GC policies, plus AddToCell inputs to a sum
// family (several per cell, merged on read), and checks that every reversed read
// (random filters, limits, row sets of several ranges and keys) returns
// the forward read's rows in the opposite order, the limit counting from
// the last row.
func TestReverseReadIsForwardReversed(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	clock := &fakeClock{}
	clock.now.Store(1_000_000_000)
	opts := testOptions(t.TempDir())
	opts.Clock = clock.Now
	opts.L0Trigger = 100 // keep the SSTables apart
	opts.Families = []families.Family{
		{Name: "a", BlockSize: families.MinBlockSize, MaxVersions: 2},
		{Name: "b", BlockSize: families.MinBlockSize, Bloom: families.BloomRow, TTL: 10 * time.Second},
		{Name: "c", MaxVersions: 1, TTL: 20 * time.Second, GC: families.GCIntersection, Bloom: families.BloomRowColumn},
		{Name: "s", ValueType: families.Sum, MaxVersions: 2},
	}
	tb := openTablet(t, opts)
	fams := []string{"a", "b", "c", "s"}
	row := func() string {
		if rng.Intn(8) == 0 {
			return fmt.Sprintf("r%02d\x00x", rng.Intn(40)) // a 0x00 byte: escaped in keys
		}
		return fmt.Sprintf("r%02d", rng.Intn(40))
	}
	randMut := func() cell.Mutation {
		f := fams[rng.Intn(len(fams))]
		q := fmt.Sprint("q", rng.Intn(4))
		ts := clock.Now() - int64(rng.Intn(30))*1_000_000
		switch n := rng.Intn(30); {
		case n < 22 && f == "s":
			// Inputs of one (column, timestamp) are frequent: the
			// timestamps are whole seconds of a 30 s window.
			return add(f, q, ts, int64(rng.Intn(21)-10))
		case n < 22:
			return set(f, q, ts, strings.Repeat(fmt.Sprint(rng.Intn(100)), 1+rng.Intn(40)))
		case n < 26:
			if rng.Intn(2) == 0 {
				return delCol(f, q, 0, 0)
			}
			return delCol(f, q, ts, ts+int64(1+rng.Intn(10))*1_000_000)
		case n < 29:
			return delFam(f)
		}
		return delRow()
	}
	randFilter := func() *rowfilter.Filter {
		var chain []*rowfilter.Filter
		if rng.Intn(3) == 0 {
			chain = append(chain, rowfilter.Family(fams[rng.Intn(len(fams))]))
		}
		if rng.Intn(4) == 0 {
			chain = append(chain, rowfilter.RowKeyRegex(fmt.Sprintf("r[0-9]%d.*", rng.Intn(10))))
		}
		if rng.Intn(4) == 0 {
			chain = append(chain, rowfilter.QualifierRange("", []byte(fmt.Sprint("q", rng.Intn(4))), nil))
		}
		if rng.Intn(4) == 0 {
			s := clock.Now() - int64(rng.Intn(30))*1_000_000
			chain = append(chain, rowfilter.TimestampRange(s, s+10_000_000))
		}
		if rng.Intn(4) == 0 {
			chain = append(chain, rowfilter.CellsPerColumnLimit(1))
		}
		if rng.Intn(5) == 0 {
			chain = append(chain, rowfilter.ValueRegex(fmt.Sprintf("%d.*", rng.Intn(10))))
		}
		if len(chain) == 0 {
			return nil
		}
		return rowfilter.Chain(chain...)
	}
	randRowSet := func(o *ReadOptions) string {
		var parts []string
		for n := rng.Intn(3); n > 0; n-- {
			k := row()
			o.Keys = append(o.Keys, []byte(k))
			parts = append(parts, fmt.Sprintf("key %q", k))
		}
		for n := rng.Intn(4); n > 0; n-- {
			var r RowRange
			if rng.Intn(4) != 0 {
				r.Start = []byte(row())
			}
			if rng.Intn(4) != 0 {
				r.End = []byte(row())
			}
			if r.Start != nil && r.End != nil && string(r.Start) > string(r.End) {
				r.Start, r.End = r.End, r.Start
			}
			o.Ranges = append(o.Ranges, r)
			parts = append(parts, fmt.Sprintf("[%q, %q)", r.Start, r.End))
		}
		return strings.Join(parts, " ")
	}
	compared := 0
	for step := 0; step < 600; step++ {
		muts := []cell.Mutation{randMut()}
		for rng.Intn(2) == 0 {
			muts = append(muts, randMut())
		}
		apply(t, tb, row(), muts...)
		if rng.Intn(80) == 0 {
			// A large row: many cells, spanning the 1 KiB blocks.
			r := row()
			for i := 0; i < 60; i++ {
				apply(t, tb, r, set(fams[rng.Intn(2)], fmt.Sprintf("big%02d", i), clock.Now()-int64(i), strings.Repeat("v", 50)))
			}
		}
		switch rng.Intn(60) {
		case 0, 1:
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := tb.Compact(bg, false); err != nil {
				t.Fatal(err)
			}
		case 3:
			clock.now.Add(int64(rng.Intn(5)) * 1_000_000)
		}
		if step%20 != 19 {
			continue
		}
		for q := 0; q < 5; q++ {
			var o ReadOptions
			set := "all"
			if rng.Intn(4) != 0 {
				set = randRowSet(&o)
			}
			o.Filter = randFilter()
			want := scanRows(t, tb, o)
			slices.Reverse(want)
			if rng.Intn(2) == 0 {
				o.Limit = int64(1 + rng.Intn(5))
				want = want[:min(len(want), int(o.Limit))]
			}
			o.Reverse = true
			got := scanRows(t, tb, o)
			compared += len(want)
			if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
				t.Fatalf("step %d: reversed read of %s filter %v limit %d (%v):\n  got  %s\n  want %s", step, set, o.Filter, o.Limit, tb.Stats().Families, g, w)
			}
		}
	}
	st := tb.Stats()
	t.Logf("%d rows compared; SSTables at the end: a %d, b %d, c %d, s %d", compared, st.Families["a"].SSTables, st.Families["b"].SSTables, st.Families["c"].SSTables, st.Families["s"].SSTables)
	if compared < 100 {
		t.Fatalf("only %d rows compared: the test reads too little", compared)
	}
}

// TestReverseReadOfSnapshot: a reversed iterator opened before writes,
// flushes and compactions shows the state from before.
func TestReverseReadOfSnapshot(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	for i := 0; i < 20; i++ {
		apply(t, tb, fmt.Sprintf("r%02d", i), set("a", "q", 1, fmt.Sprint("v", i)))
		if i%7 == 6 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := scanRows(t, tb, ReadOptions{})
	slices.Reverse(want)
	it, err := tb.NewRowIterator(bg, ReadOptions{Reverse: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if it.Next() {
		got = append(got, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	for i := 0; i < 20; i++ {
		apply(t, tb, fmt.Sprintf("r%02d", i), delRow())
		apply(t, tb, fmt.Sprintf("r%02dx", i), set("b", "q", 1, "new"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		got = append(got, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		t.Fatalf("reversed iterator under changes saw\n  %s\nwant\n  %s", g, w)
	}
}
