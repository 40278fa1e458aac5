package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"unsafe"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"
)

// Filter block encoding (stored uncompressed, followed by the usual trailer),
// the same header and bit layout in every format version:
//
//	+-----------------+-----------------+----------------------------------+
//	| m (bits) uint64 | k (hashes)      | bit words [ceil(m/64)]uint64 LE  |
//	| LE              | uint32 LE       |                                  |
//	+-----------------+-----------------+----------------------------------+
//
// Bit i is bit i%64 of word i/64. The entries are the row prefixes
// (cell.RowPrefix) of the keys and, for a row+column filter, their column
// prefixes (cell.ColumnPrefix) too. What differs between versions is which
// bits an entry sets (see format.go for the version in the footer):
//
//   - version 1: the bits of a github.com/bits-and-blooms/bloom/v3 filter
//     with m bits and k hash functions (murmur3 of the entry). Read only:
//     its bits cannot be computed without the entry itself, so its writer
//     had to keep every entry of a file until the end.
//   - version 2: h = XXH64(entry, seed 0) and d = h rotated left by 32 bits;
//     probe j (0 ≤ j < k) sets bit ⌊(h + j·d mod 2⁶⁴) · m / 2⁶⁴⌋ (Kirsch–
//     Mitzenmacher double hashing, mapped to [0, m) by multiply-high). The
//     writer keeps one 64-bit hash per distinct entry instead of the entry,
//     and a probe costs a multiplication instead of a division.
const (
	filterHeaderLen = 12
	maxFilterHashes = 64
)

// filter answers whether an entry may have been added.
type filter interface {
	mayContain(entry []byte) bool
	// memSize is the memory the decoded filter holds, in bytes.
	memSize() int64
}

// filterBuilder collects the hashes of the distinct filter entries until the
// file is finished, when their count sizes the filter. Keys arrive sorted,
// so the entries of one row (and of one column) arrive together and
// deduplicating against the last entry of each kind is enough; comparing
// hashes is as good as comparing entries, since equal hashes set equal bits.
type filterBuilder struct {
	// chunks hold the hashes, in chunks of at most maxHashChunk: one
	// growing slice would copy them at each growth, and hold the old and
	// the new copy at once.
	chunks           [][]uint64
	n                int // hashes in chunks
	lastRow, lastCol lastHash
}

// maxHashChunk bounds the hashes of one chunk (64 KiB); the first chunks
// are smaller, so that a small file's filter costs little.
const maxHashChunk = 8192

// lastHash is the hash of the last entry of one kind, if there was one.
type lastHash struct {
	h   uint64
	set bool
}

func (b *filterBuilder) add(entry []byte, last *lastHash) {
	h := xxhash.Sum64(entry)
	if last.set && last.h == h {
		return
	}
	*last = lastHash{h, true}
	if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1]) == cap(b.chunks[len(b.chunks)-1]) {
		b.chunks = append(b.chunks, make([]uint64, 0, min(max(b.n, 64), maxHashChunk)))
	}
	c := &b.chunks[len(b.chunks)-1]
	*c = append(*c, h)
	b.n++
}

func (b *filterBuilder) addRow(prefix []byte)    { b.add(prefix, &b.lastRow) }
func (b *filterBuilder) addColumn(prefix []byte) { b.add(prefix, &b.lastCol) }

// filterParams returns the number of bits (a multiple of 64) and of hash
// functions for n entries at the given false-positive rate: the optimum of
// a standard bloom filter, as bits-and-blooms's EstimateParameters computes
// it (so version 2 is never smaller than version 1 for the same input).
func filterParams(n int, falsePositive float64) (m uint64, k uint32) {
	n = max(n, 1)
	mf := math.Ceil(-float64(n) * math.Log(falsePositive) / (math.Ln2 * math.Ln2))
	m = (max(uint64(mf), 1) + 63) &^ 63
	k = uint32(math.Ceil(math.Ln2 * mf / float64(n)))
	return m, min(max(k, 1), maxFilterHashes)
}

// build returns the encoded (version 2) filter block.
func (b *filterBuilder) build(falsePositive float64) []byte {
	m, k := filterParams(b.n, falsePositive)
	out := make([]byte, filterHeaderLen+m/8)
	binary.LittleEndian.PutUint64(out, m)
	binary.LittleEndian.PutUint32(out[8:], k)
	bitset := out[filterHeaderLen:]
	for _, c := range b.chunks {
		for _, h := range c {
			d := bits.RotateLeft64(h, 32)
			for range k {
				bit, _ := bits.Mul64(h, m)
				bitset[bit>>3] |= 1 << (bit & 7)
				h += d
			}
		}
	}
	return out
}

// hashFilter is a decoded version 2 filter.
type hashFilter struct {
	m      uint64
	k      uint32
	bitset []byte
}

func (f *hashFilter) mayContain(entry []byte) bool {
	h := xxhash.Sum64(entry)
	d := bits.RotateLeft64(h, 32)
	for range f.k {
		bit, _ := bits.Mul64(h, f.m)
		if f.bitset[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
		h += d
	}
	return true
}

func (f *hashFilter) memSize() int64 { return int64(unsafe.Sizeof(*f)) + int64(cap(f.bitset)) }

// libraryFilter is a decoded version 1 filter.
type libraryFilter struct{ f *bloom.BloomFilter }

func (f libraryFilter) mayContain(entry []byte) bool { return f.f.Test(entry) }

func (f libraryFilter) memSize() int64 {
	return int64(unsafe.Sizeof(*f.f)) + int64((f.f.Cap()+63)/64*8)
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var errBadFilter = errors.New("bad filter encoding")

// decodeFilter decodes the filter block of a file of the given format
// version. The filter does not alias b: a reader may recycle its blocks.
func decodeFilter(b []byte, version uint32) (filter, error) {
	if len(b) < filterHeaderLen || (len(b)-filterHeaderLen)%8 != 0 {
		return nil, errBadFilter
	}
	m := binary.LittleEndian.Uint64(b)
	k := binary.LittleEndian.Uint32(b[8:])
	nwords := uint64(len(b)-filterHeaderLen) / 8
	if m == 0 || m > nwords*64 || k == 0 || k > maxFilterHashes || (m+63)/64 != nwords {
		return nil, errBadFilter
	}
	switch version {
	case 1:
		words := make([]uint64, nwords)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(b[filterHeaderLen+8*i:])
		}
		return libraryFilter{bloom.FromWithM(words, uint(m), uint(k))}, nil
	case 2:
		return &hashFilter{m: m, k: k, bitset: bytes.Clone(b[filterHeaderLen:])}, nil
	}
	return nil, errBadVersion
}
