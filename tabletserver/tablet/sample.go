package tablet

import (
	"bytes"
	"slices"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/sstable"
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
	// Each block's row is kept encoded (the row prefix of its last key,
	// which sorts as the rows do) in one arena, and decoded only for the
	// samples: no allocation per block (docs/BENCHMARKS.md "SampleRowKeys
	// from the SSTable indexes").
	type point struct {
		off, n int // the row prefix: arena[off : off+n]
		size   uint64
	}
	type source struct {
		f  *tableFile
		rd *sstable.Reader
	}
	var srcs []source
	var blocks, rowBytes uint64
	for _, name := range t.schema.Load().names {
		for _, f := range v.files[name] {
			rd, err := f.reader()
			if err != nil {
				return nil, 0, err
			}
			srcs = append(srcs, source{f, rd})
			// Sized once from the files' properties: grown by append, the
			// two took five times their final size (docs/BENCHMARKS.md).
			p := rd.Properties()
			blocks += p.NumDataBlocks
			if rp, err := cell.RowPrefix(p.LargestKey); err == nil {
				rowBytes += p.NumDataBlocks * uint64(len(rp))
			}
		}
	}
	pts := make([]point, 0, blocks)
	arena := make([]byte, 0, rowBytes+rowBytes/4)
	prefix := func(p point) []byte { return arena[p.off : p.off+p.n] }
	for _, src := range srcs {
		f, rd := src.f, src.rd
		first := len(pts)
		rd.VisitIndex(f.lower(), f.upper(), func(lastKey []byte, size uint64) {
			rp, err := cell.RowPrefix(lastKey)
			if err != nil {
				return
			}
			// A file's blocks come in key order: blocks of one row
			// (a row larger than a block) are one point.
			if n := len(pts); n > first && bytes.Equal(prefix(pts[n-1]), rp) {
				pts[n-1].size += size
				return
			}
			pts = append(pts, point{off: len(arena), n: len(rp), size: size})
			arena = append(arena, rp...)
		})
	}
	slices.SortFunc(pts, func(a, b point) int { return bytes.Compare(prefix(a), prefix(b)) })
	inside := func(r []byte) bool {
		return len(r) > 0 && (t.start == nil || bytes.Compare(r, t.start) > 0) && (t.end == nil || bytes.Compare(r, t.end) < 0)
	}
	var out []Sample
	var acc uint64
	next := every
	for i, p := range pts {
		if i > 0 && bytes.Equal(prefix(p), prefix(pts[i-1])) {
			acc += p.size
			continue
		}
		// acc is the size of the blocks whose last row is before p's row.
		if acc >= next {
			if row, _, err := cell.AppendKeyRow(nil, prefix(p)); err == nil && inside(row) {
				out = append(out, Sample{Row: row, Offset: acc})
				next = acc + every
			}
		}
		acc += p.size
	}
	return out, acc, nil
}
