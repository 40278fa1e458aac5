package tablet

import (
	"bytes"
	"sort"

	"github.com/tabuladb/tabula/sstable"
)

// runIter reads a sorted run's files (see runs.go) one after another over
// a span, as if they were one file: it opens a file's iterator (and the
// file itself, if no read has yet: tablefile.go) only when the read
// reaches the file, and one at a time. A scan over a run of a
// hundred files then costs what a scan of one file costs, where a merge of
// a hundred iterators would compare keys across all of them at each entry
// and read the first block of every file up front.
type runIter struct {
	files  []*tableFile  // in key order, each possibly holding keys of the span
	lo, hi []byte        // the span
	noFill bool          // see sstable.Iter.DontFillCache
	pins   *sstable.Pins // see sstable.Iter.SetPins; nil: none
	i      int           // the file it reads
	it     sstable.Iter  // over files[i], when opened
	opened bool
	err    error
}

// newRunIter returns an iterator over the files of a run (in key order)
// that may hold keys in [lo, hi), its files' iterators set up with noFill
// and pins (nil: none).
func newRunIter(files []*tableFile, lo, hi []byte, noFill bool, pins *sstable.Pins) *runIter {
	return &runIter{files: files, lo: lo, hi: hi, noFill: noFill, pins: pins}
}

// open positions the iterator on file i at the first key >= k (nil: its
// first key), going on to the next files while one holds no such key.
func (r *runIter) open(i int, k []byte) bool {
	for ; i < len(r.files); i, k = i+1, nil {
		r.closeFile()
		f := r.files[i]
		lo, hi, ok := intersect(r.lo, r.hi, f.lower(), f.upper())
		if !ok {
			continue
		}
		rd, err := f.reader()
		if err != nil {
			r.err = err
			return false
		}
		rd.InitIter(&r.it, lo, hi)
		if r.noFill {
			r.it.DontFillCache()
		}
		r.it.SetPins(r.pins)
		r.i, r.opened = i, true
		var valid bool
		if k == nil {
			valid = r.it.First()
		} else {
			valid = r.it.SeekGE(k)
		}
		if valid {
			return true
		}
		if err := r.it.Err(); err != nil {
			r.err = err
			return false
		}
	}
	r.closeFile()
	return false
}

func (r *runIter) closeFile() {
	if r.opened {
		r.opened = false
		if err := r.it.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
}

// SeekGE positions at the first key >= k of the run's files.
func (r *runIter) SeekGE(k []byte) bool {
	r.err = nil
	i := sort.Search(len(r.files), func(i int) bool {
		_, _, largest := r.files[i].keys()
		return bytes.Compare(largest, k) >= 0
	})
	return r.open(i, k)
}

// Next moves to the next key, into the next file when one ends.
func (r *runIter) Next() bool {
	if !r.opened {
		return false
	}
	if r.it.Next() {
		return true
	}
	return r.nextFile()
}

// nextFile moves to the first key of the file after the current one, the
// current one being exhausted (or failed).
func (r *runIter) nextFile() bool {
	if err := r.it.Err(); err != nil {
		r.err = err
		return false
	}
	return r.open(r.i+1, nil)
}

func (r *runIter) Valid() bool   { return r.err == nil && r.opened && r.it.Valid() }
func (r *runIter) Key() []byte   { return r.it.Key() }
func (r *runIter) Value() []byte { return r.it.Value() }
func (r *runIter) Err() error    { return r.err }

// Close closes the open file's iterator and returns the iterator's error.
func (r *runIter) Close() error {
	r.closeFile()
	r.files = nil
	return r.err
}
