package sstable

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula/internal/unzeroed"
)

// Recycled block memory. A scan of a family larger than the cache reads
// every block from the file: each one used to be a new allocation that
// the cache soon evicted, so the scan allocated as fast as it read and the
// collector ran (with its write barriers on) for a quarter of the scan's
// time (docs/BENCHMARKS.md). A decoded data block is therefore a blockBuf
// that counts its holders: the cache holds one reference while the block
// is cached, an iterator one while it reads it, and a Pins one for a
// caller still using values of a block its iterator has left. The last
// release returns the memory to a pool of its size class, and the next
// block read takes it from there.
//
// Values that callers may keep for good (a point read's cells, the cells
// of a scan that does not reuse them) must never point into memory that
// is recycled: an iterator without Pins never gives its references back,
// so the blocks it read are never recycled and the collector frees them
// once nothing points into them, as before. Only callers that say when
// they are done with a value (SetPins) let blocks be recycled.

// blockBuf is a decoded data block and the count of its holders.
type blockBuf struct {
	data []byte // the block; cap(data) is the memory it costs
	refs atomic.Int32
	// class is the index of data's size class in blockPools, or -1 for
	// memory that is not pooled (larger than every class, or decoded by a
	// codec into memory of its own).
	class int
}

// ref adds a holder.
func (b *blockBuf) ref() { b.refs.Add(1) }

// release drops a holder; the last one recycles the memory.
func (b *blockBuf) release() { b.drop(true) }

// drop is release; count says whether a recycled block counts in
// RecycledBlocks (not the scratch memory a compressed block was read
// into).
func (b *blockBuf) drop(count bool) {
	n := b.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		panic("sstable: block released more often than it was held")
	}
	if poisonReleased {
		// A reader still using the block reads this instead of its
		// values: the tests (all under -race, which sets it) compare
		// what they read with a model.
		full := b.data[:cap(b.data)]
		for i := range full {
			full[i] = poisonByte
		}
	}
	if b.class >= 0 {
		if count {
			recycledBlocks.Add(1)
		}
		blockPools[b.class].Put(b)
	}
}

// recycledBlocks counts blocks given back to their pool.
var recycledBlocks atomic.Uint64

// RecycledBlocks returns how many decoded blocks this process has given
// back for reuse: it grows with the blocks read by compactions and by
// scans that reuse their cells (tablet ReadOptions.ReuseCells), and not
// with blocks whose values a caller may keep.
func RecycledBlocks() uint64 { return recycledBlocks.Load() }

// poisonByte fills released blocks in poisoned builds.
const poisonByte = 0xdb

// maxPooledBlock is the largest size class kept for reuse: data blocks
// are a few KiB (4 KiB by default, up to a value's size for large
// values), and larger memory is rare enough to leave to the collector.
const maxPooledBlock = 64 << 10

// blockClasses are the capacities the Go allocator gives allocations up
// to maxPooledBlock (its size classes, then whole pages), ascending;
// blockPools[i] holds free blockBufs of capacity blockClasses[i].
var (
	blockClasses = sizeClasses(maxPooledBlock)
	blockPools   = make([]sync.Pool, len(blockClasses))
)

// sizeClasses lists the capacities slices.Grow gives byte slices up to
// max: each is the allocation's real size.
func sizeClasses(max int) []int {
	var cs []int
	for n := 1; n <= max; {
		c := cap(slices.Grow([]byte(nil), n))
		cs = append(cs, c)
		n = c + 1
	}
	return cs
}

// newBlockBuf returns a block of length n with one holder (the caller),
// recycled when a block of its size class is free. Its bytes are
// undefined: the caller writes all n.
func newBlockBuf(n int) *blockBuf {
	i := sort.SearchInts(blockClasses, n)
	if i == len(blockClasses) {
		b := &blockBuf{data: unzeroed.Bytes(n), class: -1}
		b.refs.Store(1)
		return b
	}
	if v := blockPools[i].Get(); v != nil {
		b := v.(*blockBuf)
		b.data = b.data[:n]
		b.refs.Store(1)
		return b
	}
	b := &blockBuf{data: unzeroed.Bytes(blockClasses[i])[:n], class: i}
	b.refs.Store(1)
	return b
}

// ownBlockBuf wraps memory a codec decoded into (not pooled) as a block
// with one holder.
func ownBlockBuf(data []byte) *blockBuf {
	b := &blockBuf{data: data, class: -1}
	b.refs.Store(1)
	return b
}

// Pins holds the blocks that iterators given it (Iter.SetPins) have left
// while their caller may still use values read from them. Release gives
// them back once the caller is done with every value read so far (a scan
// after it has sent a row, a compaction after it has written one); blocks
// the iterators are still reading are not in it. The zero value is
// ready; a nil *Pins holds nothing. Not safe for concurrent use.
type Pins struct {
	bufs []*blockBuf
}

// add takes over a holder of b.
func (p *Pins) add(b *blockBuf) { p.bufs = append(p.bufs, b) }

// Release gives back every block held: values read from them must not be
// used afterwards.
func (p *Pins) Release() {
	if p == nil {
		return
	}
	for i, b := range p.bufs {
		b.release()
		p.bufs[i] = nil
	}
	p.bufs = p.bufs[:0]
}
