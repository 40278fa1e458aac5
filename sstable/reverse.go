package sstable

import (
	"bytes"
	"sort"

	"github.com/tabuladb/tabula/cell"
)

// ReverseIter walks a Reader's rows in descending order within [lower,
// upper), for reversed scans; the entries of each row still come in
// ascending key order, as a row is assembled from them. A row is the run of
// keys sharing a cell.RowPrefix, so the keys must be cell.AppendKey
// encodings (as every Tabula SSTable's are).
//
// It walks the data blocks from the last one of the range down. Each block
// is decoded once when the walk reaches it, noting where each of its rows
// starts; the rows are then yielded from the last to the first, each read
// forward from its start. A row that begins in an earlier block (large
// rows span blocks) is read forward from that block, and the walk goes on
// from there. Memory is the two blocks last decoded (the one walked and
// the one a spanning row ends in) and the row starts of one block.
//
// It is not safe for concurrent use; close it exactly once. Key and Value
// are valid until the next move.
type ReverseIter struct {
	r            *Reader
	lower, upper []byte
	loBlock      int // the blocks of the range are [loBlock, hiBlock)
	hiBlock      int
	started      bool

	// The backward walk: block bIdx, its row starts, and the current
	// row's index among them.
	bIdx   int
	starts []rowStart
	arena  []byte // the row starts' keys
	si     int

	// The forward read of the current row, at block fIdx.
	fIdx   int
	fwd    blockIter
	prefix []byte // the current row's prefix (a copy)
	valid  bool

	// memo holds the two blocks last decoded, so that a row spanning a
	// block boundary does not read either block twice.
	memo [2]memoBlock
	tick int

	err    error
	closed bool
}

// rowStart is where a row begins in a block: its first entry's offset and
// its whole key (an entry after a restart point stores only what its key
// adds to the previous one, so decoding it needs that prefix).
type rowStart struct {
	off          int
	keyOff, kLen int // in arena
}

type memoBlock struct {
	idx  int
	data []byte
	used int
}

// NewReverseIter returns an iterator over the rows with keys in [lower,
// upper), from the last row down; nil bounds are unbounded. The bounds are
// copied. Call PrevRow to move to the first row.
func (r *Reader) NewReverseIter(lower, upper []byte) *ReverseIter {
	it := &ReverseIter{r: r, lower: bytes.Clone(lower), upper: bytes.Clone(upper)}
	if r.closed.Load() {
		it.err = ErrClosed // its index is gone: PrevRow fails
		return it
	}
	if err := r.ensure(); err != nil {
		it.err = err
		return it
	}
	it.loBlock, it.hiBlock = r.blocksFor(lower, upper)
	it.memo[0].idx, it.memo[1].idx = -1, -1
	return it
}

// PrevRow moves to the row before the current one (the first call: the
// last row of the range) and positions at its first entry. It returns
// false when no row is left or on error.
func (it *ReverseIter) PrevRow() bool {
	it.valid = false
	if it.closed {
		it.err = ErrClosed
		return false
	}
	if it.err != nil {
		return false
	}
	if !it.started {
		it.started = true
		it.bIdx, it.si = it.hiBlock, -1
	} else {
		it.si--
	}
	for it.si < 0 {
		if it.bIdx-1 < it.loBlock {
			return false
		}
		if !it.walkBlock(it.bIdx - 1) {
			return false
		}
		it.si = len(it.starts) - 1
	}
	p, err := cell.RowPrefix(it.startKey(it.si))
	if err != nil {
		return it.fail(it.bIdx, err)
	}
	it.prefix = append(it.prefix[:0], p...)
	if it.si == 0 && it.bIdx > 0 {
		// The row may begin in an earlier block: that block's last key
		// is of the same row.
		last := it.r.index.lastKey(it.bIdx - 1)
		if bytes.HasPrefix(last, it.prefix) && (it.lower == nil || bytes.Compare(last, it.lower) >= 0) {
			target := it.prefix
			if it.lower != nil && bytes.Compare(it.lower, target) > 0 {
				target = it.lower
			}
			j := sort.Search(it.bIdx, func(i int) bool { return bytes.Compare(it.r.index.lastKey(i), target) >= 0 })
			// Block j ends inside the row, so the row is its last one:
			// the walk goes on from there.
			if !it.walkBlock(j) {
				return false
			}
			it.si = len(it.starts) - 1
			if it.si < 0 {
				return it.fail(j, errBlockEntry) // the index promised an entry >= target
			}
		}
	}
	return it.startRow()
}

// startRow positions the forward read at row start si of block bIdx.
func (it *ReverseIter) startRow() bool {
	data, ok := it.block(it.bIdx)
	if !ok {
		return false
	}
	// Rows of one block share its decoding (init checks the whole
	// restart array).
	if it.fIdx != it.bIdx || len(it.fwd.data) == 0 || len(data) == 0 || &it.fwd.data[0] != &data[0] {
		it.fIdx = it.bIdx
		if err := it.fwd.init(data); err != nil {
			return it.fail(it.bIdx, err)
		}
	}
	s := it.starts[it.si]
	it.fwd.key = append(it.fwd.key[:0], it.arena[s.keyOff:s.keyOff+s.kLen]...)
	if !it.fwd.decodeAt(s.off) {
		return it.fail(it.bIdx, it.fwd.err)
	}
	it.valid = true
	return true
}

// Next moves to the current row's next entry; false at the row's end or
// on error.
func (it *ReverseIter) Next() bool {
	if !it.valid {
		return false
	}
	if !it.fwd.next() {
		if it.fwd.err != nil {
			return it.fail(it.fIdx, it.fwd.err)
		}
		// The row may go on in the next block.
		if it.fIdx+1 >= it.hiBlock || !bytes.HasPrefix(it.r.index.lastKey(it.fIdx), it.prefix) {
			it.valid = false
			return false
		}
		data, ok := it.block(it.fIdx + 1)
		if !ok {
			return false
		}
		it.fIdx++
		if err := it.fwd.init(data); err != nil {
			return it.fail(it.fIdx, err)
		}
		if !it.fwd.first() {
			if it.fwd.err != nil {
				return it.fail(it.fIdx, it.fwd.err)
			}
			it.valid = false
			return false
		}
	}
	k := it.fwd.key
	it.valid = bytes.HasPrefix(k, it.prefix) && (it.upper == nil || bytes.Compare(k, it.upper) < 0)
	return it.valid
}

// walkBlock makes block i the block of the backward walk, noting where its
// rows in [lower, upper) start.
func (it *ReverseIter) walkBlock(i int) bool {
	data, ok := it.block(i)
	if !ok {
		return false
	}
	it.bIdx = i
	it.starts, it.arena = it.starts[:0], it.arena[:0]
	var b blockIter
	if err := b.init(data); err != nil {
		return it.fail(i, err)
	}
	var prev []byte // the last row start's prefix, in arena
	for ok := b.first(); ok; ok = b.next() {
		if it.upper != nil && bytes.Compare(b.key, it.upper) >= 0 {
			break
		}
		if it.lower != nil && bytes.Compare(b.key, it.lower) < 0 {
			continue
		}
		if prev != nil && bytes.HasPrefix(b.key, prev) {
			continue
		}
		p, err := cell.RowPrefix(b.key)
		if err != nil {
			return it.fail(i, err)
		}
		off := len(it.arena)
		it.arena = append(it.arena, b.key...)
		it.starts = append(it.starts, rowStart{off: b.off, keyOff: off, kLen: len(b.key)})
		prev = it.arena[off : off+len(p)]
	}
	if b.err != nil {
		return it.fail(i, b.err)
	}
	return true
}

func (it *ReverseIter) startKey(si int) []byte {
	s := it.starts[si]
	return it.arena[s.keyOff : s.keyOff+s.kLen]
}

// block returns decoded block i, from the memo when it holds it.
func (it *ReverseIter) block(i int) ([]byte, bool) {
	it.tick++
	for k := range it.memo {
		if m := &it.memo[k]; m.idx == i {
			m.used = it.tick
			return m.data, true
		}
	}
	// The reference is never given back: values of a reversed scan stay
	// valid for good, so its blocks are never recycled.
	bb, err := it.r.dataBlock(i, true)
	if err != nil {
		it.err = err
		it.valid = false
		return nil, false
	}
	b := bb.data
	k := 0
	if it.memo[1].used < it.memo[0].used {
		k = 1
	}
	it.memo[k] = memoBlock{idx: i, data: b, used: it.tick}
	return b, true
}

func (it *ReverseIter) fail(block int, err error) bool {
	it.err = corruptf(it.r.path, kindData, it.r.index.handle(block).offset, "%v", err)
	it.valid = false
	return false
}

// RowPrefix returns the current row's prefix (cell.RowPrefix of its keys);
// it is valid until the next PrevRow.
func (it *ReverseIter) RowPrefix() []byte { return it.prefix }

// Valid reports whether the iterator is at an entry of the current row.
func (it *ReverseIter) Valid() bool { return it.valid }

// Key returns the current key; it is valid until the next move.
func (it *ReverseIter) Key() []byte { return it.fwd.key }

// Value returns the current value; it is valid until the next move and
// must not be modified.
func (it *ReverseIter) Value() []byte { return it.fwd.val }

// Err returns the error that stopped the iterator, if any.
func (it *ReverseIter) Err() error { return it.err }

// Close releases the iterator and returns its error.
func (it *ReverseIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.valid = false
	it.r = nil
	it.memo = [2]memoBlock{}
	it.fwd = blockIter{}
	return it.err
}
