package tablet

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
)

// spanFile is a file for the run functions: rows [first, last], the
// seq'th flush.
func spanFile(seq uint64, first, last string) *tableFile {
	return &tableFile{own: true, ref: manifest.FileRef{Size: 1, MinSeq: seq, MaxSeq: seq},
		rows: &rowSpan{first: cell.EncodeRow([]byte(first)), last: cell.EncodeRow([]byte(last))}}
}

// describeRuns prints runs as "[a-b c-d] [e-f]": each run's files in key
// order, by their first and last rows.
func describeRuns(runs []run) string {
	var out []string
	for _, r := range runs {
		var fs []string
		for _, f := range r.files {
			if f.rows == nil {
				fs = append(fs, "none")
				continue
			}
			fs = append(fs, decodedRow(f.rows.first)+"-"+decodedRow(f.rows.last))
		}
		out = append(out, "["+strings.Join(fs, " ")+"]")
	}
	return strings.Join(out, " ")
}

// decodedRow decodes an encoded row.
func decodedRow(enc []byte) string {
	row, _, err := cell.AppendKeyRow(nil, enc)
	if err != nil {
		return "?"
	}
	return string(row)
}

func TestSortedRuns(t *testing.T) {
	// Each case lists files newest first as "first-last" (or "none": no
	// rows), and the runs wanted, newest first, each in key order.
	for _, c := range []struct{ files, want string }{
		{"e-f c-d a-b", "[a-b c-d e-f]"},               // flushed in key order
		{"a-b c-d e-f", "[a-b c-d e-f]"},               // in reverse key order
		{"c-d e-f a-b", "[a-b c-d e-f]"},               // a gap filled later
		{"a-z c-d e-f", "[a-z] [c-d e-f]"},             // a newer file over older ones
		{"c-d a-z e-f", "[c-d] [a-z] [e-f]"},           // runs are contiguous in age
		{"c-d a-c", "[c-d] [a-c]"},                     // one row in both: not disjoint
		{"a-c c-d", "[a-c] [c-d]"},                     // the same, in the other order
		{"e-f none c-d a-b", "[e-f] [none] [a-b c-d]"}, // a file without rows ends a run
		{"g-h e-f c-d a-z b-b", "[c-d e-f g-h] [a-z] [b-b]"},
	} {
		var files []*tableFile
		for i, s := range strings.Fields(c.files) {
			seq := uint64(100 - i)
			if s == "none" {
				files = append(files, &tableFile{own: true, ref: manifest.FileRef{Size: 1, MinSeq: seq, MaxSeq: seq}})
				continue
			}
			first, last, _ := strings.Cut(s, "-")
			files = append(files, spanFile(seq, first, last))
		}
		runs := sortedRuns(files)
		if got := describeRuns(runs); got != c.want {
			t.Errorf("sortedRuns(%s) = %s, want %s", c.files, got, c.want)
			continue
		}
		// first and the run sizes place each run in the newest-first list.
		next := 0
		for _, r := range runs {
			if r.first != next || r.size != uint64(len(r.files)) {
				t.Errorf("sortedRuns(%s): run at %d of %d files (size %d), want at %d", c.files, r.first, len(r.files), r.size, next)
			}
			next += len(r.files)
		}
	}
}

// The picker counts runs: any number of files in key order is one run and
// is never picked; files written out of order are merged with the runs
// next to them, as files were.
func TestPickTieredCountsRuns(t *testing.T) {
	var inOrder []*tableFile
	for i := range 20 {
		inOrder = append([]*tableFile{spanFile(uint64(i+1), fmt.Sprintf("r%02d0", i), fmt.Sprintf("r%02d9", i))}, inOrder...)
	}
	if got := pickTiered(inOrder, 2); got != nil {
		t.Fatalf("pickTiered picked %d of 20 files flushed in key order", len(got))
	}
	// Three files over every row on top: four runs, the three newest
	// (one file each, size 1) merged, the run of 20 left alone.
	files := inOrder
	for i := range 3 {
		files = append([]*tableFile{spanFile(uint64(30+i), "r", "s")}, files...)
	}
	got := pickTiered(files, 2)
	if len(got) != 3 || got[0] != files[0] || got[2] != files[2] {
		t.Fatalf("pickTiered picked %d files, want the 3 newest", len(got))
	}
	// Under the trigger nothing is picked however many files.
	if got := pickTiered(files, 4); got != nil {
		t.Fatalf("pickTiered picked %d files of 4 runs with trigger 4", len(got))
	}
	// Until a run is too long to keep open: then it is merged whole.
	var long []*tableFile
	for i := range maxRunFiles + 1 {
		long = append([]*tableFile{spanFile(uint64(i+1), fmt.Sprintf("r%04d0", i), fmt.Sprintf("r%04d9", i))}, long...)
	}
	if got := pickTiered(long[1:], 8); got != nil {
		t.Fatalf("pickTiered picked %d files of a run of %d", len(got), maxRunFiles)
	}
	files = append([]*tableFile{spanFile(5000, "a", "z")}, long...)
	if got := pickTiered(files, 8); len(got) != maxRunFiles+1 || got[0] != long[0] {
		t.Fatalf("pickTiered picked %d files of a run of %d, want all of them", len(got), maxRunFiles+1)
	}
}

// Files flushed in key order are read, never rewritten, by background
// compactions, and files written out of order among them are merged as
// before; whatever the mix, every read returns what a tablet holding the
// same writes only in its memtable returns (no file, so no run): scans of
// random ranges forward and reversed, row sets, point reads of present
// and absent rows. Deletes (of columns, families, rows) land in the
// in-order files too, so a tombstone and the cells it deletes may sit in
// different files of a run only if they are different rows.
func TestSortedRunsReadTheSame(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	fams := []families.Family{{Name: "a"}, {Name: "b", Bloom: families.BloomRow, Compression: families.CompressionSnappy}}
	log := &compactionLog{}
	opts := testOptions(t.TempDir())
	opts.Families = fams
	opts.L0Trigger = 3
	opts.Events = &Events{Compacted: log.add}
	tb := openTablet(t, opts)
	refOpts := testOptions(t.TempDir())
	refOpts.Families = fams
	refOpts.MemtableSize = 1 << 30
	ref := openTablet(t, refOpts)

	row := func(i int) string { return fmt.Sprintf("r%05d", i) }
	both := func(rw string, muts ...cell.Mutation) {
		apply(t, tb, rw, muts...)
		apply(t, ref, rw, muts...)
	}
	randMut := func() cell.Mutation {
		f := []string{"a", "b"}[r.Intn(2)]
		q := fmt.Sprint("q", r.Intn(3))
		switch n := r.Intn(20); {
		case n < 15:
			return set(f, q, int64(1+r.Intn(4)), fmt.Sprint(r.Intn(1000)))
		case n < 17:
			return delCol(f, q, 0, 0)
		case n < 19:
			return delFam(f)
		}
		return delRow()
	}
	check := func(step string) {
		t.Helper()
		reads := []ReadOptions{{}, {Reverse: true}}
		for range 4 {
			lo, hi := r.Intn(2200), r.Intn(2200)
			if lo > hi {
				lo, hi = hi, lo
			}
			rg := RowRange{Start: []byte(row(lo)), End: []byte(row(hi))}
			reads = append(reads, ReadOptions{Ranges: []RowRange{rg}}, ReadOptions{Ranges: []RowRange{rg}, Reverse: true},
				ReadOptions{Keys: [][]byte{[]byte(row(lo)), []byte(row(hi)), []byte(row(r.Intn(2200)))}})
		}
		for _, ro := range reads {
			if got, want := scan(t, tb, ro), scan(t, ref, ro); got != want {
				t.Fatalf("seed %d, %s: read %+v\ngot  %s\nwant %s", seed, step, ro, got, want)
			}
		}
		for range 20 {
			rw := row(r.Intn(2200))
			if got, want := readRow(t, tb, rw, nil), readRow(t, ref, rw, nil); got != want {
				t.Fatalf("seed %d, %s: ReadRow(%s) = %q, want %q", seed, step, rw, got, want)
			}
		}
	}

	next, inOrder := 0, 0
	for step := range 40 {
		if next < 2000 && r.Intn(4) != 0 {
			// The next rows in key order, a few deleted again.
			n := 1 + r.Intn(60)
			for i := next; i < next+n; i++ {
				both(row(i), randMut(), randMut())
			}
			next += n
			inOrder++
		} else {
			// Rows anywhere written so far, or a bit beyond.
			for range 1 + r.Intn(30) {
				both(row(r.Intn(next+50)), randMut())
			}
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := tb.backgroundCompact(bg); err != nil {
			t.Fatal(err)
		}
		st := tb.Stats()
		for _, f := range fams {
			if n := st.Families[f.Name].SortedRuns; n > opts.L0Trigger {
				t.Fatalf("seed %d, step %d: family %s has %d sorted runs after background compactions, trigger %d", seed, step, f.Name, n, opts.L0Trigger)
			}
		}
		check(fmt.Sprintf("step %d", step))
	}
	st := tb.Stats().Families["a"]
	t.Logf("%d flushes in key order; family a: %d files in %d runs; %d compactions", inOrder, st.SSTables, st.SortedRuns, log.count())
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	check("after a major compaction")
}

// A load in key order writes each byte once: forty flushes of ascending
// rows make forty files, one run, no compaction.
func TestKeyOrderedFlushesAreNotRewritten(t *testing.T) {
	log := &compactionLog{}
	opts := testOptions(t.TempDir())
	opts.L0Trigger = 2
	opts.Events = &Events{Compacted: log.add}
	tb := openTablet(t, opts)
	for f := range 40 {
		flushRows(t, tb, "a", f*10, f*10+10, 1)
		if err := tb.backgroundCompact(bg); err != nil {
			t.Fatal(err)
		}
	}
	st := tb.Stats()
	if a := st.Families["a"]; log.count() != 0 || a.SSTables != 40 || a.SortedRuns != 1 || st.CompactionBacklog != 0 {
		t.Fatalf("%d compactions; family a %+v, backlog %d; want no compaction, 40 files in 1 run", log.count(), a, st.CompactionBacklog)
	}
	if got := len(scanRows(t, tb, ReadOptions{})); got != 400 {
		t.Fatalf("scan saw %d rows, want 400", got)
	}
	if got, want := readRow(t, tb, "r00237", nil), "a:q@1=v1"; got != want {
		t.Fatalf("r00237 = %q, want %q", got, want)
	}
}

// A row deleted in a newer file whose other rows come before or after an
// older file's is in both files: they are not one run, and every read
// applies the tombstone to the older file's cells of that row.
func TestRowInTwoFilesIsNotOneRun(t *testing.T) {
	for _, c := range []struct {
		name         string
		older, newer []string // rows written; the newer file also deletes c
		want         string
	}{
		{"newer file after", []string{"a", "b", "c"}, []string{"d"}, "a{a:q@1=a} b{a:q@1=b} d{a:q@1=d}"},
		{"newer file before", []string{"c", "d", "e"}, []string{"a", "b"}, "a{a:q@1=a} b{a:q@1=b} d{a:q@1=d} e{a:q@1=e}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := openTablet(t, testOptions(t.TempDir()))
			for _, r := range c.older {
				apply(t, tb, r, set("a", "q", 1, r))
			}
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
			apply(t, tb, "c", delRow())
			for _, r := range c.newer {
				apply(t, tb, r, set("a", "q", 1, r))
			}
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
			if n := tb.Stats().Families["a"].SortedRuns; n != 2 {
				t.Fatalf("%d sorted runs, want 2", n)
			}
			if got := readRow(t, tb, "c", nil); got != "" {
				t.Fatalf("deleted row c reads %q", got)
			}
			if got := scan(t, tb, ReadOptions{}); got != c.want {
				t.Fatalf("scan = %s, want %s", got, c.want)
			}
		})
	}
}
