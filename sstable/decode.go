package sstable

import (
	"slices"

	"github.com/golang/snappy"

	"github.com/tabuladb/tabula/internal/unzeroed"
)

// A block handed to the cache (or to an iterator, whose values callers may
// keep: see Iter) is memory for good, so its capacity is what it costs. The
// helpers below allocate blocks whose capacity is the size the Go allocator
// really gives them (slices.Grow rounds up to the allocation's size class),
// so that the cache, which charges a block's capacity, charges the real
// memory.

// allocBlock returns a zeroed slice of length n whose capacity is the
// memory the allocator gives it.
func allocBlock(n int) []byte { return slices.Grow([]byte(nil), n)[:n] }

// allocBlockUnzeroed is allocBlock for callers that overwrite all n bytes
// at once (a decode, a copy): its bytes are not zeroed first
// (internal/unzeroed). Bytes past what the caller writes are undefined,
// never read: blocks are never appended to.
func allocBlockUnzeroed(n int) []byte {
	if n == 0 {
		return allocBlock(0)
	}
	return unzeroed.Bytes(n)
}

// decodeInto returns the decoded block of stored bytes of type typ. Like
// decompressBlock (an uncompressed block is stored itself; a compressed
// one is decoded into memory that never aliases stored), but a snappy
// block's capacity is its real allocation.
func decodeInto(typ byte, stored []byte) ([]byte, error) {
	if typ != blockTypeSnappy {
		return decompressBlock(typ, stored)
	}
	n, err := snappy.DecodedLen(stored)
	if err != nil {
		return nil, err
	}
	if n > maxBlockSize {
		return nil, errBlockTooLarge
	}
	return snappy.Decode(allocBlockUnzeroed(n), stored)
}
