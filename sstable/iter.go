package sstable

import (
	"bytes"
	"sort"
)

// Iter walks a Reader's entries in key order, restricted to [lower, upper).
// It is not safe for concurrent use; close it exactly once. Key and Value
// are valid until the next move.
type Iter struct {
	r            *Reader
	lower, upper []byte
	block        int // index of the current data block
	blk          blockIter
	// held is block heldIdx (the iterator holds a reference), kept so
	// that a seek landing in the block the iterator already has does not
	// read (and decompress) it again: a scan skipping rows seeks once per
	// row, and a large block read per seek made such scans crawl. nil:
	// none.
	held    *blockBuf
	heldIdx int
	// pins, if set (SetPins), takes the references of the blocks the
	// iterator leaves; without it they are never given back (see
	// blockbuf.go).
	pins   *Pins
	valid  bool
	err    error
	closed bool
	// fileClosed: the Reader was closed before the iterator was made
	// (its index is gone); every seek fails with ErrClosed.
	fileClosed bool
	// loadErr: the Reader's index could not be loaded again (see
	// Reader.Unload); every seek fails with it.
	loadErr error
	// noFill: blocks read from the file are not added to the cache (see
	// DontFillCache).
	noFill bool
	// loaded counts the bytes of the blocks the iterator has moved onto
	// (see scanFillShareDiv).
	loaded int64
	// keyBuf is the block iterator's first key buffer, so that a point
	// read's first decode does not allocate.
	keyBuf [64]byte
	// bounds backs lower and upper; InitIter reuses it.
	bounds []byte
	// ra is the readahead window of a scan reading blocks in order.
	ra readahead
}

// NewIter returns an iterator over the keys in [lower, upper); a nil bound
// is unbounded. The bounds are copied.
func (r *Reader) NewIter(lower, upper []byte) *Iter {
	it := &Iter{}
	r.InitIter(it, lower, upper)
	return it
}

// InitIter makes it an iterator over r's keys in [lower, upper), as NewIter
// does, reusing its memory: a reader doing many point reads keeps a few
// iterators instead of allocating one per read. it must be closed or
// never used.
func (r *Reader) InitIter(it *Iter, lower, upper []byte) {
	bounds := it.bounds[:0]
	*it = Iter{r: r, fileClosed: r.closed.Load()}
	if !it.fileClosed {
		it.loadErr = r.ensure()
	}
	it.blk.key = it.keyBuf[:0]
	// One buffer holds both bounds' copies.
	buf := bounds
	if cap(buf) < len(lower)+len(upper) {
		buf = make([]byte, 0, len(lower)+len(upper))
	}
	it.bounds = buf
	if lower != nil {
		buf = append(buf, lower...)
		it.lower = buf[:len(lower):len(lower)]
	}
	if upper != nil {
		buf = append(buf, upper...)
		it.upper = buf[len(buf)-len(upper):]
	}
}

// SetPins lets the blocks the iterator reads be recycled: the reference
// to each block it leaves (moving on, seeking, closing) goes to p, and the
// caller releases p once it no longer uses any Value read before. Without
// it, values stay valid for good (the iterator's blocks are never
// recycled). It lasts until the iterator is closed or initialized again.
func (it *Iter) SetPins(p *Pins) { it.pins = p }

// DontFillCache makes the iterator leave the blocks it reads from the file
// out of the cache (blocks the cache holds are still used), for a reader
// that reads each block once, such as a compaction: the blocks of files
// about to be deleted would push out the blocks that reads use. It lasts
// until the iterator is closed or initialized again.
func (it *Iter) DontFillCache() { it.noFill = true }

// First positions at the first key >= lower.
func (it *Iter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	return it.start(0, nil)
}

// SeekGE positions at the first key >= key (and >= lower). It resets the
// error.
func (it *Iter) SeekGE(key []byte) bool {
	if it.closed {
		return it.start(0, key) // fails with ErrClosed
	}
	if it.lower != nil && bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	idx := &it.r.index
	i := sort.Search(idx.len(), func(i int) bool { return bytes.Compare(idx.lastKey(i), key) >= 0 })
	return it.start(i, key)
}

// start positions at the first entry >= key (nil: the first entry) of
// block i or of the blocks after it.
func (it *Iter) start(i int, key []byte) bool {
	it.err = nil
	it.valid = false
	if it.closed || it.fileClosed {
		it.err = ErrClosed
		return false
	}
	if it.loadErr != nil {
		it.err = it.loadErr
		return false
	}
	for ; i < it.r.index.len(); i++ {
		if !it.loadBlock(i) {
			return false
		}
		var ok bool
		if key != nil {
			ok = it.blk.seekGE(key)
		} else {
			ok = it.blk.first()
		}
		if ok {
			return it.settle()
		}
		if it.blk.err != nil {
			return it.blockFailed()
		}
		key = nil // later blocks hold only larger keys
	}
	return false
}

// Next moves to the next key.
func (it *Iter) Next() bool {
	if !it.valid {
		return false
	}
	if it.blk.next() {
		return it.settle()
	}
	if it.blk.err != nil {
		return it.blockFailed()
	}
	return it.start(it.block+1, nil)
}

// settle applies the upper bound to the entry the block iterator is at.
func (it *Iter) settle() bool {
	it.valid = it.upper == nil || bytes.Compare(it.blk.key, it.upper) < 0
	return it.valid
}

func (it *Iter) loadBlock(i int) bool {
	if it.upper != nil && i > 0 && bytes.Compare(it.r.index.lastKey(i-1), it.upper) >= 0 {
		return false // every key of block i is past the upper bound
	}
	if it.held == nil || it.heldIdx != i {
		b, err := it.r.dataBlockAhead(i, !it.noFill, &it.ra, it.upper)
		if err != nil {
			it.err = err
			return false
		}
		it.leaveHeld()
		it.held, it.heldIdx = b, i
		it.noteLoaded(len(b.data))
	}
	it.block = i
	if err := it.blk.init(it.held.data); err != nil {
		it.blk.err = err
		return it.blockFailed()
	}
	return true
}

// leaveHeld hands the held block's reference to the pins, or keeps it
// for good without them.
func (it *Iter) leaveHeld() {
	if it.held != nil && it.pins != nil {
		it.pins.add(it.held)
	}
	it.held = nil
}

// scanFillShareDiv bounds what one iterator adds to the cache from a file
// bigger than the whole cache: once it has moved over more than the
// cache's capacity / scanFillShareDiv bytes of the file's blocks, it reads
// like a compaction (DontFillCache). A scan through such a file cannot hit
// its own blocks again (by the time it comes back the cache has turned
// over), and filling would push out the blocks point reads use (HBase
// advises setCacheBlocks(false) for such scans, RocksDB fill_cache=false;
// here no one has to ask). A file the cache can hold is cached as it is
// read, so repeated scans of it hit. Measured: a full scan of a table 9×
// the cache took 1.3× less CPU (docs/BENCHMARKS.md).
const scanFillShareDiv = 4

// noteLoaded counts a block the iterator moved onto and stops filling the
// cache past its share of it, for a file bigger than the cache.
func (it *Iter) noteLoaded(n int) {
	it.loaded += int64(n)
	c := it.r.cache
	if !it.noFill && c != nil && it.loaded > c.capacity/scanFillShareDiv && int64(it.r.props.DataSize) > c.capacity {
		it.noFill = true
	}
}

func (it *Iter) blockFailed() bool {
	off := it.r.index.handle(it.block).offset
	it.err = corruptf(it.r.path, kindData, off, "%v", it.blk.err)
	it.valid = false
	return false
}

// Valid reports whether the iterator is at an entry.
func (it *Iter) Valid() bool { return it.valid }

// Key returns the current key; it is valid until the next move.
func (it *Iter) Key() []byte { return it.blk.key }

// Value returns the current value; it is valid until the next move and
// must not be modified.
func (it *Iter) Value() []byte { return it.blk.val }

// Err returns the error that stopped the iterator, if any.
func (it *Iter) Err() error { return it.err }

// Close releases the iterator. It returns the iterator's error.
func (it *Iter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.valid = false
	// Drop the references to the file and block: a closed iterator may
	// wait in a pool for reuse.
	it.r = nil
	it.blk = blockIter{key: it.blk.key[:0]}
	it.leaveHeld()
	it.pins = nil
	it.ra.release()
	return it.err
}
