package tablet

import (
	"bytes"
	"sort"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
)

// Sorted runs (docs/CONTRACTS.md §3, "Compaction").
//
// A family's files, newest first, fall into sorted runs: maximal groups of
// consecutive files whose row ranges are pairwise disjoint. Rows written in
// key order (a load, time series keyed by time, ids from a counter) flush
// into files that each start after the last one ends: they all make one
// run, however many there are. The compaction trigger counts runs, not
// files, so such files are never rewritten just because there are many of
// them (what pebble achieves by moving a file to a lower level without
// rewriting it); a read takes one file of a run (a point read: the one
// whose rows may hold its row) or reads the run's files one after another
// (runIter), never merges them. A file written out of order overlaps an
// older one and starts a new run, which the size-tiered picker merges as
// it merges files.
//
// Rows, not keys, decide: a family or row tombstone and the cells it
// deletes are different keys of one row, and they must never be taken for
// the disjoint contents of two files.

// rowSpan is the first and last row (encoded, cell.RowPrefix) of a file's
// entries.
type rowSpan struct {
	first, last []byte
}

// fileRowSpan returns the rows a file's entries span, from the keys its
// manifest record holds (taken from its properties when the manifest had
// none: tablefile.go), nil when it has none (or its keys do not decode):
// such a file makes a run of its own.
func fileRowSpan(ref manifest.FileRef) *rowSpan {
	if !ref.HasKeys() {
		return nil
	}
	first, err := cell.RowPrefix(ref.SmallestKey)
	if err != nil {
		return nil
	}
	last, err := cell.RowPrefix(ref.LargestKey)
	if err != nil {
		return nil
	}
	return &rowSpan{first: first, last: last}
}

// run is one sorted run of a family.
type run struct {
	// files are the run's files in key order: every row of one comes
	// before every row of the next.
	files []*tableFile
	// spans are the files' rows, in the same order; nil for a run of one
	// file without rows (fileRowSpan).
	spans []rowSpan
	// first is the index, in the family's newest-first list, of the run's
	// newest file; the run holds the len(files) files from there on.
	first int
	size  uint64
}

// sortedRuns splits files (one family's, newest first) into sorted runs,
// newest first: each run takes the next older file while its rows are
// disjoint from those of every file the run holds.
func sortedRuns(files []*tableFile) []run {
	var runs []run
	var cur run
	for i, f := range files {
		sp := f.rows
		if sp != nil && len(cur.files) > 0 {
			if at, fits := cur.slot(*sp); fits {
				cur.files = insertAt(cur.files, at, f)
				cur.spans = insertAt(cur.spans, at, *sp)
				cur.size += f.ref.Size
				continue
			}
		}
		if len(cur.files) > 0 {
			runs = append(runs, cur)
		}
		cur = run{files: []*tableFile{f}, first: i, size: f.ref.Size}
		if sp == nil {
			runs = append(runs, cur)
			cur = run{}
			continue
		}
		cur.spans = []rowSpan{*sp}
	}
	if len(cur.files) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// slot returns where a file spanning sp goes in the run's key order, and
// whether its rows are disjoint from every file's there.
func (r *run) slot(sp rowSpan) (int, bool) {
	at := sort.Search(len(r.spans), func(i int) bool { return bytes.Compare(r.spans[i].first, sp.first) > 0 })
	if at > 0 && bytes.Compare(r.spans[at-1].last, sp.first) >= 0 {
		return 0, false
	}
	if at < len(r.spans) && bytes.Compare(sp.last, r.spans[at].first) >= 0 {
		return 0, false
	}
	return at, true
}

// fileOf returns the index of the run's file whose rows may include the
// encoded row, or -1.
func (r *run) fileOf(row []byte) int {
	i := sort.Search(len(r.spans), func(i int) bool { return bytes.Compare(r.spans[i].last, row) >= 0 })
	if i == len(r.spans) || bytes.Compare(row, r.spans[i].first) < 0 {
		return -1
	}
	return i
}

func insertAt[T any](s []T, i int, x T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = x
	return s
}

// within returns the run's files that may hold keys in [lo, hi) (nil:
// unbounded), in key order: a subslice of files.
func (r *run) within(lo, hi []byte) []*tableFile {
	fs := r.files
	start := 0
	if lo != nil {
		start = sort.Search(len(fs), func(i int) bool {
			_, _, largest := fs[i].keys()
			return bytes.Compare(largest, lo) >= 0
		})
	}
	end := len(fs)
	if hi != nil {
		end = start + sort.Search(len(fs)-start, func(i int) bool {
			_, smallest, _ := fs[start+i].keys()
			return bytes.Compare(smallest, hi) >= 0
		})
	}
	return fs[start:end]
}
