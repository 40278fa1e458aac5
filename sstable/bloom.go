package sstable

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"unsafe"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/cespare/xxhash/v2"

	"github.com/tabuladb/tabula/internal/offheap"
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
//
// Given an upper bound on the entries (expected, from what a flush or a
// compaction reads), it stops keeping hashes once they reach an eighth of
// it (and at least directAfter): it sizes the filter for the bound, sets
// the bits of the hashes so far and of every later one as it comes, and at
// the end folds the filter down to the size the real count asks for (see
// fold). A file of 4M rows then holds a filter of 5 MB while it is
// written instead of 32 MB of hashes (the largest allocation of a
// compaction, doubled by the garbage collector's headroom).
type filterBuilder struct {
	// chunks hold the hashes, in chunks of at most maxHashChunk: one
	// growing slice would copy them at each growth, and hold the old and
	// the new copy at once.
	chunks           [][]uint64
	n                int // distinct entries added
	lastRow, lastCol lastHash
	// expected bounds the entries from above; 0: unknown (keep hashes).
	expected int
	// block, once set, is a filter block (header room, then the bits) of
	// every entry added for m bits and k probes; chunks are dropped.
	block []byte
	m     uint64
	k     uint32
	fp    float64
	// mem holds block outside the Go heap (a compaction's largest
	// buffer, 5 MB at 4M keys); free releases it.
	mem *offheap.Buf
	// pending are hashes whose bits are not yet set in block: they are
	// set setBatch at a time (see setPending).
	pending  [setBatch]uint64
	npending int
}

// setBatch is how many hashes a direct builder sets bits for at once.
// The probes of a filter larger than the CPU's caches miss, and a miss
// taken between two entries of a compaction stalls it; the probes of many
// hashes in one tight loop are independent loads the CPU overlaps
// (BenchmarkFilterAddDirect: docs/BENCHMARKS.md "Filter bits set in
// batches").
const setBatch = 64

// free releases the builder's filter block; neither the builder nor what
// build returned is used afterwards. A nil builder does nothing.
func (b *filterBuilder) free() {
	if b == nil {
		return
	}
	b.mem.Free()
	b.block, b.mem = nil, nil
}

// directAfter is the fewest hashes kept before the builder may set bits
// directly: below it, hashes cost less than a filter sized for the bound.
const directAfter = 16 << 10

// foldUnit is the granularity of a direct filter's size in bits: 64 bits
// times 840, the least common multiple of 1 to 8, so that it folds by any
// factor up to 8 into whole 64-bit words.
const foldUnit = 64 * 840

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
	b.n++
	if b.block != nil {
		b.pending[b.npending] = h
		if b.npending++; b.npending == setBatch {
			b.setPending()
		}
		return
	}
	if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1]) == cap(b.chunks[len(b.chunks)-1]) {
		b.chunks = append(b.chunks, make([]uint64, 0, min(max(b.n, 64), maxHashChunk)))
	}
	c := &b.chunks[len(b.chunks)-1]
	*c = append(*c, h)
	if b.expected > 0 && b.n >= max(directAfter, b.expected/8) && b.n <= b.expected {
		b.goDirect()
	}
}

// goDirect sizes the filter for the expected entries (rounded up to
// foldUnit), sets the bits of the hashes kept so far and drops them.
func (b *filterBuilder) goDirect() {
	m, k := filterParams(b.expected, b.fp)
	b.m = (m + foldUnit - 1) / foldUnit * foldUnit
	b.k = k
	b.mem = offheap.Alloc(filterHeaderLen + int(b.m/8))
	b.block = b.mem.Bytes()
	for _, c := range b.chunks {
		for _, h := range c {
			setBits(b.block[filterHeaderLen:], b.m, b.k, h)
		}
	}
	b.chunks = nil
}

// setPending sets the bits of the pending hashes.
func (b *filterBuilder) setPending() {
	bitset := b.block[filterHeaderLen:]
	for _, h := range b.pending[:b.npending] {
		setBits(bitset, b.m, b.k, h)
	}
	b.npending = 0
}

// setBits sets the k probes of hash h in a filter of m bits.
func setBits(bitset []byte, m uint64, k uint32, h uint64) {
	d := bits.RotateLeft64(h, 32)
	for range k {
		bit, _ := bits.Mul64(h, m)
		bitset[bit>>3] |= 1 << (bit & 7)
		h += d
	}
}

// fold returns a filter block (header room, then the bits) of m/c bits
// holding the same entries as bitset (m bits; c divides m/64): a probe's
// bit in the smaller filter is ⌊h·(m/c)/2⁶⁴⌋ = ⌊⌊h·m/2⁶⁴⌋/c⌋, its bit in
// the larger one divided by c, so bit i of the result is the OR of bits
// i·c to i·c+c-1.
func fold(bitset []byte, m uint64, c uint64) []byte {
	out := make([]byte, filterHeaderLen+m/c/8)
	folded := out[filterHeaderLen:]
	for i := uint64(0); i < m; i++ {
		if bitset[i>>3]&(1<<(i&7)) != 0 {
			j := i / c
			folded[j>>3] |= 1 << (j & 7)
		}
	}
	return out
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

// build returns the encoded (version 2) filter block. A builder setting
// bits directly folds its filter by the largest factor up to 8 that keeps
// at least the bits the real count asks for: the false-positive rate is
// the target's or better, and the filter is at most about twice the size
// a known count would give (when the bound was 1–2× the count).
func (b *filterBuilder) build(falsePositive float64) []byte {
	m, k := filterParams(b.n, falsePositive)
	if b.block != nil {
		b.setPending()
	}
	var out []byte
	switch {
	case b.block == nil:
		out = make([]byte, filterHeaderLen+m/8)
		for _, c := range b.chunks {
			for _, h := range c {
				setBits(out[filterHeaderLen:], m, k, h)
			}
		}
	case b.m/m <= 1:
		out, m, k = b.block, b.m, b.k
	default:
		c := min(b.m/m, 8)
		out = fold(b.block[filterHeaderLen:], b.m, c)
		m, k = b.m/c, b.k
	}
	binary.LittleEndian.PutUint64(out, m)
	binary.LittleEndian.PutUint32(out[8:], k)
	return out
}

// hashFilter is a decoded version 2 filter.
type hashFilter struct {
	m      uint64
	k      uint32
	bitset []byte
	mem    *offheap.Buf // bitset's memory, when decodeFilter was given it
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
// version. A version 2 filter keeps b's memory (its bits are b after the
// header): callers pass a block of its own that nothing else writes to, as
// Reader.load does (it reads the block into a buffer outside the heap and
// hands the buffer to the filter, which holds it while it is used).
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
		// The filter keeps b's memory (see decodeFilter): a copy would
		// allocate the bits twice while a large file opens.
		return &hashFilter{m: m, k: k, bitset: b[filterHeaderLen:]}, nil
	}
	return nil, errBadVersion
}
