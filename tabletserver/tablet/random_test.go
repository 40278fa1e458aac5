package tablet

import (
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0 = time)")

// TestRandomOpsReadTheSameThroughFlushCompactReopen applies random writes and
// checks that flushes, merging and major compactions and reopening never
// change what a full scan returns.
func TestRandomOpsReadTheSameThroughFlushCompactReopen(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.Families = []families.Family{{Name: "a", MaxVersions: 3}, {Name: "b"}, {Name: "log"}}
	opts.L0Trigger = 2
	tb := openTablet(t, opts)
	fams := []string{"a", "b", "log"}
	randMut := func() cell.Mutation {
		f := fams[r.Intn(len(fams))]
		q := fmt.Sprint("q", r.Intn(3))
		switch n := r.Intn(20); {
		case n < 14:
			return set(f, q, int64(r.Intn(6)), fmt.Sprint(r.Intn(100)))
		case n < 17:
			start := int64(r.Intn(6))
			end := int64(0)
			if r.Intn(2) == 0 {
				end = start + 1 + int64(r.Intn(3))
			}
			return delCol(f, q, start, end)
		case n < 19:
			return delFam(f)
		}
		return delRow()
	}
	for step := 0; step < 300; step++ {
		row := fmt.Sprint("r", r.Intn(12))
		muts := []cell.Mutation{randMut()}
		for r.Intn(3) == 0 {
			muts = append(muts, randMut())
		}
		apply(t, tb, row, muts...)
		if step%25 != 24 {
			continue
		}
		before := scan(t, tb, ReadOptions{})
		var what string
		switch r.Intn(4) {
		case 0:
			what = "flush"
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		case 1:
			what = "merging compaction"
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
			if err := tb.Compact(bg, false); err != nil {
				t.Fatal(err)
			}
		case 2:
			what = "major compaction"
			if err := tb.Compact(bg, true); err != nil {
				t.Fatal(err)
			}
		case 3:
			what = "reopen"
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			tb = openTablet(t, opts)
		}
		if after := scan(t, tb, ReadOptions{}); after != before {
			t.Fatalf("step %d: %s changed the data:\nbefore %s\nafter  %s", step, what, before, after)
		}
		// Point reads agree with the scan.
		it, err := tb.NewRowIterator(bg, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			if got := readRow(t, tb, string(it.Row()), nil); got != render(it.Cells()) {
				t.Fatalf("step %d: ReadRow(%s) = %q, scan has %q", step, it.Row(), got, render(it.Cells()))
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
