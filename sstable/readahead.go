package sstable

import (
	"bytes"
	"sync"
)

// Readahead. A forward scan that misses the cache reads its data blocks
// from the file one by one: a system call per block on a local disk (the
// largest single cost of a cold scan after decompression) and a request
// per block on an object store. Once an iterator has loaded blocks in
// order twice running, it reads the stored bytes of the blocks that
// follow in one call into a buffer of its own: a window of 32 KiB at
// first, then 64 KiB, never past the block
// that holds the iterator's upper bound (later blocks cannot be read) nor
// past the data blocks. Blocks are then checked and decompressed from the
// window as the scan reaches them, exactly as a block read on its own
// (its checksum, its own error naming its offset). A point read or a seek
// that jumps never triggers it, and a failed window read is forgotten:
// the block is read on its own and any error is that read's.
//
// 64 KiB already takes a read per 8–16 blocks (scans measured the same
// with 256 KiB windows), and a compaction holds a window per input: 40
// inputs held 10 MB of 256 KiB windows.
const (
	minReadahead = 32 << 10
	maxReadahead = 64 << 10
)

// readaheadPool holds window buffers (maxReadahead bytes each): a scan
// takes one when it starts reading ahead and gives it back when closed.
var readaheadPool = sync.Pool{New: func() any {
	b := make([]byte, maxReadahead)
	return &b
}}

// readahead is an iterator's window of stored blocks.
type readahead struct {
	buf   *[]byte // nil until the first window
	start uint64  // file offset of the window's first byte
	n     int     // bytes of the window holding file data; 0: none
	size  int     // the last window's size, 0 before the first
	run   int     // block loads in order since the last jump
	after int     // index+1 of the last block loaded; 0: none
}

// loaded records that block i is being loaded and reports whether the
// iterator should read ahead on a miss: the two loads before it were in
// order.
func (ra *readahead) loaded(i int) bool {
	if ra.after != 0 && i == ra.after {
		ra.run++
	} else {
		ra.run = 0
	}
	ra.after = i + 1
	return ra.run >= 2
}

// stored returns block h's stored bytes (with its trailer) if the window
// holds them.
func (ra *readahead) stored(h blockHandle) ([]byte, bool) {
	if ra.n == 0 || h.offset < ra.start || h.end() > ra.start+uint64(ra.n) {
		return nil, false
	}
	return (*ra.buf)[h.offset-ra.start : h.end()-ra.start], true
}

// fill reads a window starting at block i of r, up to the block holding
// upper (nil: unbounded). It reports whether block i is now in the window.
func (ra *readahead) fill(r *Reader, i int, upper []byte) bool {
	ra.n = 0
	ra.size = min(max(2*ra.size, minReadahead), maxReadahead)
	start, end := r.index.handle(i).offset, r.index.handle(i).end()
	for j := i; j+1 < r.index.len(); j++ {
		if upper != nil && bytes.Compare(r.index.lastKey(j), upper) >= 0 {
			break // block j holds the last keys below upper
		}
		e := r.index.handle(j + 1).end()
		if e-start > uint64(ra.size) {
			break
		}
		end = e
	}
	if end == r.index.handle(i).end() {
		return false // a window of one block is the block's own read
	}
	if ra.buf == nil {
		ra.buf = readaheadPool.Get().(*[]byte)
	}
	n := int(end - start)
	if err := r.readAt((*ra.buf)[:n], start, kindData); err != nil {
		return false
	}
	ra.start, ra.n = start, n
	return true
}

// release gives the window's buffer back.
func (ra *readahead) release() {
	if ra.buf != nil {
		readaheadPool.Put(ra.buf)
	}
	*ra = readahead{}
}

// storedOrFill returns block i's stored bytes from the window, filling it
// first when the block is not there and ahead is set. ra may be nil.
func (ra *readahead) storedOrFill(r *Reader, i int, ahead bool, upper []byte) ([]byte, bool) {
	if ra == nil {
		return nil, false
	}
	h := r.index.handle(i)
	if b, ok := ra.stored(h); ok {
		return b, true
	}
	if !ahead || !ra.fill(r, i, upper) {
		return nil, false
	}
	return ra.stored(h)
}
