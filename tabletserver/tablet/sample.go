package tablet

import (
	"bytes"
	"slices"

	"github.com/tabuladb/tabula/cell"
)

// Sample is a row key of a tablet with the approximate number of bytes of
// the tablet's data that lie before it.
type Sample struct {
	// Row is a whole row key (a boundary between rows, never a key in the
	// middle of one), strictly inside the tablet's range.
	Row []byte
	// Offset is the on-disk size of the tablet's SSTable data blocks whose
	// last row sorts before Row, across every family and file.
	Offset uint64
}

// SampleKeys returns row keys about every `every` bytes of the tablet's
// SSTable data, in key order and without duplicates, and the tablet's
// total: the on-disk size of its data blocks within its range. It is what
// a job splitting the tablet into pieces of about `every` bytes needs
// (Bigtable's SampleRowKeys; docs/OPERATIONS.md "Cutting a table for
// parallel jobs").
//
// The samples come from the SSTables' indexes alone, as SplitKey's middle
// row does: every data block's last row and size, for every file of every
// family, merged in row order. A sample is taken at the first row whose
// blocks before it reach the previous sample's offset plus every, so
// consecutive samples are at least every bytes apart and at most every
// plus the blocks of one row (one block, unless the row is larger than a
// block). No data block is read; a file not opened yet is opened (one tail
// read: its index and filter, held as a read would hold them), since the
// manifest's record of a file has only its first and last keys. The
// memtable is not sampled: flush first to count it.
func (t *Tablet) SampleKeys(every uint64) ([]Sample, uint64, error) {
	if every == 0 {
		return nil, 0, cell.Invalidf("sample interval must be positive")
	}
	v, err := t.currentVersion()
	if err != nil {
		return nil, 0, err
	}
	defer v.unref()
	type point struct {
		row  []byte
		size uint64
	}
	var pts []point
	for _, name := range t.schema.Load().names {
		for _, f := range v.files[name] {
			rd, err := f.reader()
			if err != nil {
				return nil, 0, err
			}
			entries := rd.IndexEntries(f.lower(), f.upper())
			pts = slices.Grow(pts, len(entries))
			for _, e := range entries {
				if row, ok := rowOfKey(e.LastKey); ok {
					pts = append(pts, point{row, e.Size})
				}
			}
		}
	}
	slices.SortFunc(pts, func(a, b point) int { return bytes.Compare(a.row, b.row) })
	inside := func(r []byte) bool {
		return len(r) > 0 && (t.start == nil || bytes.Compare(r, t.start) > 0) && (t.end == nil || bytes.Compare(r, t.end) < 0)
	}
	var out []Sample
	var acc uint64
	next := every
	for i, p := range pts {
		if i > 0 && bytes.Equal(p.row, pts[i-1].row) {
			acc += p.size
			continue
		}
		// acc is the size of the blocks whose last row is before p.row.
		if acc >= next && inside(p.row) {
			out = append(out, Sample{Row: p.row, Offset: acc})
			next = acc + every
		}
		acc += p.size
	}
	return out, acc, nil
}
