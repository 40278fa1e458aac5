package sstable

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/tabuladb/tabula/internal/offheap"
)

// Block encoding (data and index blocks), before compression:
//
//	+---------+---------+-----+-----------+--------------+-------------------+
//	| entry 0 | entry 1 | ... | entry n-1 | restarts     | numRestarts       |
//	|         |         |     |           | [m]uint32 LE | uint32 LE (= m)   |
//	+---------+---------+-----+-----------+--------------+-------------------+
//
//	entry: uvarint shared | uvarint unshared | uvarint valueLen |
//	       key[shared:] (unshared bytes) | value (valueLen bytes)
//
// shared is the length of the prefix the key shares with the previous key
// of the block; it is 0 at every restart point, where the whole key is
// written. restarts holds the offsets of the restart entries (one every
// RestartInterval entries, the first at 0), in increasing order, so that a
// seek binary-searches them before scanning at most RestartInterval entries.
// A block with no entries has no restarts (m = 0).

// blockWriter builds one block.
type blockWriter struct {
	interval int
	buf      []byte
	restarts []uint32
	counter  int // entries since the last restart
	entries  int
	lastKey  []byte
	// offheap: buf lives in mem outside the Go heap and grows by
	// doubling into a new buffer, the old one freed at once (a file's
	// index block: megabytes at 4M keys, grown by appends on the heap it
	// would allocate about five times its size). free releases it.
	offheap bool
	mem     *offheap.Buf
}

// reserve makes room for n more bytes in an off-heap buf.
func (b *blockWriter) reserve(n int) {
	if !b.offheap || cap(b.buf)-len(b.buf) >= n {
		return
	}
	mem := offheap.Alloc(max(2*cap(b.buf), len(b.buf)+n, 4<<10))
	buf := append(mem.Bytes()[:0], b.buf...)
	b.mem.Free()
	b.buf, b.mem = buf, mem
}

// free releases an off-heap buf; the writer is not used afterwards.
func (b *blockWriter) free() {
	b.mem.Free()
	b.buf, b.mem = nil, nil
}

func (b *blockWriter) add(key, value []byte) {
	b.reserve(3*binary.MaxVarintLen32 + len(key) + len(value))
	shared := 0
	if b.counter < b.interval && b.entries > 0 {
		n := min(len(key), len(b.lastKey))
		for shared < n && key[shared] == b.lastKey[shared] {
			shared++
		}
	} else {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
		b.counter = 0
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.counter++
	b.entries++
}

// estimatedSize is the size finish would return.
func (b *blockWriter) estimatedSize() int { return len(b.buf) + 4*len(b.restarts) + 4 }

// finish appends the restart array and returns the block. The result is
// valid until reset.
func (b *blockWriter) finish() []byte {
	b.reserve(4*len(b.restarts) + 4)
	for _, r := range b.restarts {
		b.buf = binary.LittleEndian.AppendUint32(b.buf, r)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(b.restarts)))
	return b.buf
}

func (b *blockWriter) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.counter = 0
	b.entries = 0
	b.lastKey = b.lastKey[:0]
}

// Parts of a corruption message, never returned alone: corruptf puts the
// package, the file and the block in front, so they carry no prefix.
var (
	errBlockTrailer  = errors.New("bad restart array")
	errBlockEntry    = errors.New("bad entry")
	errBlockTooLarge = errors.New("block too large")
)

// blockIter walks the entries of one decoded block. Key is valid until the
// next move; Value aliases the block.
type blockIter struct {
	data        []byte
	entriesEnd  int // start of the restart array
	numRestarts int
	off         int // offset of the current entry
	nextOff     int // offset of the entry after it
	key         []byte
	val         []byte
	valid       bool
	err         error
}

// init checks the block's restart array and positions nowhere.
func (it *blockIter) init(data []byte) error {
	*it = blockIter{key: it.key[:0]}
	if len(data) < 4 {
		return errBlockTrailer
	}
	n := uint64(binary.LittleEndian.Uint32(data[len(data)-4:]))
	if n > uint64(len(data)-4)/4 {
		return errBlockTrailer
	}
	end := len(data) - 4 - 4*int(n)
	if n == 0 && end != 0 {
		return errBlockTrailer
	}
	prev := -1
	for i := 0; i < int(n); i++ {
		r := int(binary.LittleEndian.Uint32(data[end+4*i:]))
		if (i == 0 && r != 0) || r <= prev || r >= end {
			return errBlockTrailer
		}
		prev = r
	}
	it.data = data
	it.entriesEnd = end
	it.numRestarts = int(n)
	return nil
}

func (it *blockIter) restart(i int) int {
	return int(binary.LittleEndian.Uint32(it.data[it.entriesEnd+4*i:]))
}

// decodeAt decodes the entry at off on top of the current key.
func (it *blockIter) decodeAt(off int) bool {
	if off >= it.entriesEnd {
		it.valid = false
		return false
	}
	p := it.data[off:it.entriesEnd]
	shared, n1 := uvarint(p)
	if n1 <= 0 {
		return it.fail(errBlockEntry)
	}
	unshared, n2 := uvarint(p[n1:])
	if n2 <= 0 {
		return it.fail(errBlockEntry)
	}
	vlen, n3 := uvarint(p[n1+n2:])
	if n3 <= 0 {
		return it.fail(errBlockEntry)
	}
	h := n1 + n2 + n3
	rest := uint64(len(p) - h)
	if shared > uint64(len(it.key)) || unshared > rest || vlen > rest-unshared {
		return it.fail(errBlockEntry)
	}
	ks := h + int(unshared)
	it.key = append(it.key[:shared], p[h:ks]...)
	it.val = p[ks : ks+int(vlen) : ks+int(vlen)]
	it.off = off
	it.nextOff = off + ks + int(vlen)
	it.valid = true
	return true
}

// uvarint is binary.Uvarint with the one-byte case inlined: shared and
// unshared key lengths (and small values' lengths) take one byte, and a
// seek decodes a dozen entries.
func uvarint(p []byte) (uint64, int) {
	if len(p) > 0 && p[0] < 0x80 {
		return uint64(p[0]), 1
	}
	return binary.Uvarint(p)
}

func (it *blockIter) fail(err error) bool {
	it.err = err
	it.valid = false
	return false
}

// seekRestart positions at restart point i. The key buffer is emptied
// first, so an entry there that claims a shared prefix fails to decode.
func (it *blockIter) seekRestart(i int) bool {
	it.key = it.key[:0]
	return it.decodeAt(it.restart(i))
}

// restartKey returns the key of restart point i without decoding the
// entry into the iterator (a restart entry holds its whole key), for the
// binary search of seekGE. A malformed entry fails the iterator.
func (it *blockIter) restartKey(i int) ([]byte, bool) {
	off := it.restart(i)
	p := it.data[off:it.entriesEnd]
	shared, n1 := uvarint(p)
	if n1 <= 0 || shared != 0 {
		return nil, it.fail(errBlockEntry)
	}
	unshared, n2 := uvarint(p[n1:])
	if n2 <= 0 {
		return nil, it.fail(errBlockEntry)
	}
	_, n3 := uvarint(p[n1+n2:])
	if n3 <= 0 {
		return nil, it.fail(errBlockEntry)
	}
	h := n1 + n2 + n3
	if unshared > uint64(len(p)-h) {
		return nil, it.fail(errBlockEntry)
	}
	return p[h : h+int(unshared)], true
}

func (it *blockIter) first() bool {
	if it.numRestarts == 0 {
		it.valid = false
		return false
	}
	return it.seekRestart(0)
}

func (it *blockIter) next() bool {
	if !it.valid {
		return false
	}
	return it.decodeAt(it.nextOff)
}

// seekGE positions at the first entry with key >= target.
func (it *blockIter) seekGE(target []byte) bool {
	if it.numRestarts == 0 {
		it.valid = false
		return false
	}
	// Find the last restart point whose key is < target.
	lo, hi := 0, it.numRestarts // invariant: restarts before lo have key < target
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		k, ok := it.restartKey(mid)
		if !ok {
			return false
		}
		if bytes.Compare(k, target) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	start := max(lo-1, 0)
	if !it.seekRestart(start) {
		return false
	}
	for bytes.Compare(it.key, target) < 0 {
		if !it.next() {
			return false
		}
	}
	return true
}
