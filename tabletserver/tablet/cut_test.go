package tablet

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// TestCompactionCutsOutputsAtTargetSize checks Options.TargetFileSize: a
// major compaction of overlapping files writes several files, each but
// the last at least the target, cut between rows (rows of several cells
// never span two files), which make one sorted run and read back as the
// inputs did (scans both ways, point reads); each is unloaded until its
// first read. A second major compaction with nothing to drop rewrites
// nothing; one after a new flush does, and a merging compaction's outputs
// are cut too.
func TestCompactionCutsOutputsAtTargetSize(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	const target = 16 << 10
	opts := testOptions(t.TempDir())
	opts.TargetFileSize = target
	tb := openTablet(t, opts)
	val := func() string {
		b := make([]byte, 20+rng.Intn(60))
		for i := range b {
			b[i] = byte('a' + rng.Intn(26))
		}
		return string(b)
	}
	const rows = 1500
	for flush := range 4 {
		for range rows / 2 {
			row := fmt.Sprintf("row%05d", rng.Intn(rows))
			var muts []cell.Mutation
			for q := range 1 + rng.Intn(4) {
				muts = append(muts, set("b", fmt.Sprintf("q%d", q), int64(flush+1), val()))
			}
			apply(t, tb, row, muts...)
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	want, wantRev := scan(t, tb, ReadOptions{}), scan(t, tb, ReadOptions{Reverse: true})
	wantRows := make([]string, rows)
	for i := range rows {
		wantRows[i] = readRow(t, tb, fmt.Sprintf("row%05d", i), nil)
	}
	files := func() []*tableFile {
		v, err := tb.currentVersion()
		if err != nil {
			t.Fatal(err)
		}
		defer v.unref()
		return append([]*tableFile(nil), v.files["b"]...)
	}
	if n := len(files()); n != 4 {
		t.Fatalf("%d files before the compaction, want 4", n)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	outs := files()
	checkCut(t, outs, target)
	for _, f := range outs {
		// Opened (checked) before it was published, then unloaded.
		r := f.opened()
		if r == nil {
			t.Fatalf("compaction output %s is not open: it was published unchecked", f.path)
		}
		if n := r.MetadataBytes(); n != 0 {
			t.Errorf("compaction output %s holds %d metadata bytes before its first read, want 0", f.path, n)
		}
	}
	if got := scan(t, tb, ReadOptions{}); got != want {
		t.Fatalf("scan after the cut compaction differs:\n got %.300s\nwant %.300s", got, want)
	}
	if got := scan(t, tb, ReadOptions{Reverse: true}); got != wantRev {
		t.Fatalf("reverse scan after the cut compaction differs")
	}
	for i := range rows {
		row := fmt.Sprintf("row%05d", i)
		if got := readRow(t, tb, row, nil); got != wantRows[i] {
			t.Fatalf("ReadRow(%s) = %q after the cut compaction, want %q", row, got, wantRows[i])
		}
	}

	// Nothing to drop: the outputs stay as they are.
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if again := files(); !sameFiles(again, outs) {
		t.Fatalf("a second major compaction rewrote the %d outputs of the first into %d files", len(outs), len(again))
	}

	// A new flush: the next major compaction rewrites them all, cut again.
	apply(t, tb, "row00000", set("b", "q9", 9, val()))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	outs2 := files()
	checkCut(t, outs2, target)
	if sameFiles(outs2, outs) {
		t.Fatal("a major compaction after a flush kept the old outputs")
	}

	// A merging compaction (an operator's, of the newest files) cuts its
	// output as well; the result still reads back.
	for i := range 300 {
		apply(t, tb, fmt.Sprintf("row%05d", 2*i), set("b", "q8", 8, val()))
		if i%100 == 99 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	want = scan(t, tb, ReadOptions{})
	if err := tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, tb, ReadOptions{}); got != want {
		t.Fatal("scan after a merging compaction differs")
	}
	if n := tb.Stats().Families["b"].SortedRuns; n > 2 {
		t.Errorf("%d sorted runs after a merging compaction of the newest files over one cut major output, want at most 2", n)
	}
}

// checkCut checks that files, one family's after a compaction, are cut
// at the target: more than one, all but the last about target bytes or
// more (the cut compares the writer's estimate, which counts the block
// being built uncompressed),
// rows disjoint (one sorted run) and no row in two files.
func checkCut(t *testing.T, files []*tableFile, target uint64) {
	t.Helper()
	if len(files) < 2 {
		t.Fatalf("the compaction wrote %d file(s), want several of about %d bytes", len(files), target)
	}
	if runs := sortedRuns(files); len(runs) != 1 {
		t.Fatalf("the outputs make %d sorted runs, want 1", len(runs))
	}
	r := sortedRuns(files)[0]
	for i, f := range r.files {
		if i < len(r.files)-1 && f.ref.Size < target/2 {
			t.Errorf("output %d of %d is %d bytes, under the target %d", i, len(r.files), f.ref.Size, target)
		}
		if i > 0 && bytes.Compare(r.spans[i-1].last, r.spans[i].first) >= 0 {
			t.Errorf("outputs %d and %d share rows: %q >= %q", i-1, i, r.spans[i-1].last, r.spans[i].first)
		}
	}
}

func sameFiles(a, b []*tableFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
