package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/bits-and-blooms/bloom/v3"
)

// Filter block encoding (stored uncompressed, followed by the usual trailer):
//
//	+-----------------+-----------------+----------------------------------+
//	| m (bits) uint64 | k (hashes)      | bit words [ceil(m/64)]uint64 LE  |
//	| LE              | uint32 LE       |                                  |
//	+-----------------+-----------------+----------------------------------+
//
// The words are those of a github.com/bits-and-blooms/bloom/v3 filter with m
// bits and k hash functions; its entries are the row prefixes
// (cell.RowPrefix) of the keys and, for a row+column filter, their column
// prefixes (cell.ColumnPrefix) too.
const (
	filterHeaderLen = 12
	maxFilterHashes = 64
)

// filterBuilder buffers distinct filter entries until the file is finished,
// when their count sizes the filter. Keys arrive sorted, so the entries of
// one row (and of one column) arrive together and deduplicating against the
// last entry of each kind is enough.
type filterBuilder struct {
	arena   []byte
	ends    []int
	lastRow []byte
	lastCol []byte
}

func (b *filterBuilder) add(entry []byte, last *[]byte) {
	if *last != nil && bytes.Equal(*last, entry) {
		return
	}
	start := len(b.arena)
	b.arena = append(b.arena, entry...)
	b.ends = append(b.ends, len(b.arena))
	*last = b.arena[start:len(b.arena):len(b.arena)]
}

func (b *filterBuilder) addRow(prefix []byte)    { b.add(prefix, &b.lastRow) }
func (b *filterBuilder) addColumn(prefix []byte) { b.add(prefix, &b.lastCol) }

// build returns the encoded filter block.
func (b *filterBuilder) build(falsePositive float64) []byte {
	n := max(len(b.ends), 1)
	f := bloom.NewWithEstimates(uint(n), falsePositive)
	start := 0
	for _, end := range b.ends {
		f.Add(b.arena[start:end])
		start = end
	}
	words := f.BitSet().Words()
	out := make([]byte, filterHeaderLen, filterHeaderLen+8*len(words))
	binary.LittleEndian.PutUint64(out, uint64(f.Cap()))
	binary.LittleEndian.PutUint32(out[8:], uint32(f.K()))
	for _, w := range words {
		out = binary.LittleEndian.AppendUint64(out, w)
	}
	return out
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var errBadFilter = errors.New("bad filter encoding")

// filter answers whether an entry may have been added.
type filter interface {
	mayContain(entry []byte) bool
}

// libraryFilter is a decoded version 1 filter.
type libraryFilter struct{ f *bloom.BloomFilter }

func (f libraryFilter) mayContain(entry []byte) bool { return f.f.Test(entry) }

// decodeFilter decodes the filter block of a file of the given format
// version.
func decodeFilter(b []byte, version uint32) (filter, error) {
	if version != 1 {
		return nil, errBadVersion
	}
	if len(b) < filterHeaderLen || (len(b)-filterHeaderLen)%8 != 0 {
		return nil, errBadFilter
	}
	m := binary.LittleEndian.Uint64(b)
	k := binary.LittleEndian.Uint32(b[8:])
	nwords := uint64(len(b)-filterHeaderLen) / 8
	if m == 0 || m > nwords*64 || k == 0 || k > maxFilterHashes || (m+63)/64 != nwords {
		return nil, errBadFilter
	}
	words := make([]uint64, nwords)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[filterHeaderLen+8*i:])
	}
	return libraryFilter{bloom.FromWithM(words, uint(m), uint(k))}, nil
}
