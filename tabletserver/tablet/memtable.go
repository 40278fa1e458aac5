package tablet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"

	"github.com/tabuladb/tabula/cell"
)

// maxHeight bounds a skiplist tower; with p=1/4 it suits tens of millions of
// entries.
const maxHeight = 16

// A skiplist's nodes live in an arena: a few large byte chunks instead of
// one Go object per entry. A node is named by a ref, its chunk's index in
// the high 32 bits and its offset in the chunk in the low 32 (0 is no node:
// no node starts at offset 0). Its layout, 8-byte aligned:
//
//	[0:4] key length  [4:8] value length  [8:12] height  [12:16] unused
//	[16:16+8h] tower: the ref of the next node at each level (atomic)
//	then the key, then the value.
//
// A search visiting a node thus finds its next pointer and its key in the
// same cache line or the next one, and an insert allocates nothing but a
// new chunk now and then; the garbage collector sees a few chunks, not
// millions of objects.
const (
	nodeHeader = 16
	// Chunks grow from minChunk to maxChunk bytes, so that a memtable of
	// a small family costs little, and one that passes its flush limit
	// holds at most a chunk more than the limit (a list's bytes are its
	// chunks' sizes); an entry larger than a chunk gets a chunk of its
	// own.
	minChunk = 4 << 10
	maxChunk = 256 << 10
)

type nodeRef = uint64

// skiplist is a sorted map of encoded internal keys to values. Reads are
// lock-free (tower entries are atomic and a node is fully built before it is
// linked); inserts must be serialized by the caller (the tablet's commit
// mutex).
type skiplist struct {
	// chunks is copy-on-write: a reader that meets a ref past the chunks
	// it loaded loads them again (a chunk is published before any node
	// in it is linked).
	chunks atomic.Pointer[[][]byte]
	// head is the first node's tower, one ref per level.
	headTower [maxHeight]atomic.Uint64
	height    atomic.Int32
	// bytes is the size of the arena's chunks: the memory the list holds
	// (and the tablet charges to its flush limit and the server's
	// budget), not an estimate from its entries.
	bytes atomic.Int64
	count atomic.Int64 // entries linked
	rnd   *rand.Rand   // insert-only, under the caller's lock
	// cur is the chunk being filled and used its bytes taken; insert-only.
	cur  []byte
	used int
	// splice is the previous insert's node at the levels of its tower and
	// its predecessors above it (0: the head), when spliceSet; insert-only
	// (see findSplice).
	splice    [maxHeight]nodeRef
	spliceSet bool
}

func newSkiplist() *skiplist {
	s := &skiplist{rnd: rand.New(rand.NewPCG(rand.Uint64(), 1))}
	empty := [][]byte{}
	s.chunks.Store(&empty)
	s.height.Store(1)
	return s
}

// empty reports whether nothing was inserted. Ref 0 is never a node (every
// chunk's first bytes are unused), so an empty level-0 head means no nodes.
func (s *skiplist) empty() bool { return s.headTower[0].Load() == 0 }

// randomHeight draws a tower height: each level above the first with
// probability 1/4, two random bits per level from one draw.
func (s *skiplist) randomHeight() int {
	return min(1+bits.TrailingZeros64(s.rnd.Uint64())/2, maxHeight)
}

// nodeBytes returns the bytes of node ref, from its header on. chunks is
// the caller's snapshot, reloaded when ref lies past it.
func (s *skiplist) nodeBytes(chunks *[][]byte, ref nodeRef) []byte {
	i := int(ref >> 32)
	if i >= len(*chunks) {
		*chunks = *s.chunks.Load()
	}
	return (*chunks)[i][uint32(ref):]
}

// towerAt returns the atomic tower entry at level of node bytes b.
func towerAt(b []byte, level int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&b[nodeHeader+8*level]))
}

func nodeKey(b []byte) []byte {
	kl := binary.LittleEndian.Uint32(b)
	h := binary.LittleEndian.Uint32(b[8:])
	o := nodeHeader + 8*h
	return b[o : o+kl : o+kl]
}

func nodeValue(b []byte) []byte {
	kl := binary.LittleEndian.Uint32(b)
	vl := binary.LittleEndian.Uint32(b[4:])
	h := binary.LittleEndian.Uint32(b[8:])
	o := nodeHeader + 8*h + kl
	return b[o : o+vl : o+vl]
}

// next returns the ref following x (0: the head) at level.
func (s *skiplist) next(chunks *[][]byte, x nodeRef, level int) nodeRef {
	if x == 0 {
		return s.headTower[level].Load()
	}
	return towerAt(s.nodeBytes(chunks, x), level).Load()
}

// findGE returns the first node with key >= k, filling prev (if non-nil) with
// the last node < k at every level (0: the head).
func (s *skiplist) findGE(k []byte, prev *[maxHeight]nodeRef) nodeRef {
	chunks := *s.chunks.Load()
	var x, next nodeRef
	var xb []byte // x's bytes; nil for the head
	// known is a node already found to be >= k: when the search drops a
	// level and meets it again (about once per level), it need not compare
	// keys again. Comparisons, mostly cache misses on keys, are what an
	// insert costs.
	var known nodeRef
	for level := int(s.height.Load()) - 1; level >= 0; level-- {
		for {
			if xb == nil {
				next = s.headTower[level].Load()
			} else {
				next = towerAt(xb, level).Load()
			}
			if next == 0 || next == known {
				break
			}
			nb := s.nodeBytes(&chunks, next)
			if bytes.Compare(nodeKey(nb), k) >= 0 {
				known = next
				break
			}
			x, xb = next, nb
		}
		if prev != nil {
			prev[level] = x
		}
	}
	return next
}

// findSplice is findGE for an insert, taken from the previous insert's
// splice when k falls right after the previous key: when splice[0] < k <=
// its successor, no node lies between the two, so at every level the
// splice (the previous key, or its predecessor where its tower ends) is
// k's predecessor too. Ascending inserts thus cost two comparisons instead
// of a descent (O(log n) comparisons, each a likely cache miss); any other
// insert costs the same two more, on nodes the previous insert just
// touched.
func (s *skiplist) findSplice(k []byte, prev *[maxHeight]nodeRef) nodeRef {
	if s.spliceSet {
		chunks := *s.chunks.Load()
		p := s.splice[0]
		if bytes.Compare(nodeKey(s.nodeBytes(&chunks, p)), k) < 0 {
			n := s.next(&chunks, p, 0)
			if n == 0 || bytes.Compare(nodeKey(s.nodeBytes(&chunks, n)), k) >= 0 {
				*prev = s.splice
				return n
			}
		}
	}
	return s.findGE(k, prev)
}

// alloc returns an 8-aligned span of n bytes (rounded up) for a node and
// its ref. The span is zeroed unless unalloc gave it back; a node's writer
// fills all of it but the padding.
func (s *skiplist) alloc(n int) (nodeRef, []byte) {
	n = (n + 7) &^ 7
	if s.cur == nil || s.used+n > len(s.cur) {
		size := minChunk
		if s.cur != nil {
			size = min(2*len(s.cur), maxChunk)
		}
		size = max(size, n+8)
		old := *s.chunks.Load()
		next := make([][]byte, len(old)+1)
		copy(next, old)
		// Offset 0 stays unused: ref 0 means no node.
		s.cur, s.used = make([]byte, size), 8
		next[len(old)] = s.cur
		s.chunks.Store(&next)
		s.bytes.Add(int64(size))
	}
	ref := nodeRef(len(*s.chunks.Load())-1)<<32 | nodeRef(s.used)
	b := s.cur[s.used : s.used+n : s.used+n]
	s.used += n
	return ref, b
}

// unalloc gives back the span of the node alloc returned last, unlinked.
func (s *skiplist) unalloc(ref nodeRef, b []byte) {
	if int(ref>>32) == len(*s.chunks.Load())-1 && int(uint32(ref))+len(b) == s.used {
		s.used -= len(b)
	}
}

// allocNode allocates a node of height h for a key of kl bytes and a value
// of vl bytes and fills its header; the caller writes the key and the value
// at nodeHeader+8*h and links it.
func (s *skiplist) allocNode(h, kl, vl int) (nodeRef, []byte) {
	ref, b := s.alloc(nodeHeader + 8*h + kl + vl)
	binary.LittleEndian.PutUint32(b, uint32(kl))
	binary.LittleEndian.PutUint32(b[4:], uint32(vl))
	binary.LittleEndian.PutUint32(b[8:], uint32(h))
	return ref, b
}

// insert adds key → value; the caller serializes inserts. Both are copied.
// An existing equal key keeps its first value (keys carry sequence numbers,
// so equal keys are the same entry).
func (s *skiplist) insert(key, value []byte) {
	h := s.randomHeight()
	ref, b := s.allocNode(h, len(key), len(value))
	o := nodeHeader + 8*h
	copy(b[o:], key)
	copy(b[o+len(key):], value)
	s.link(ref, b, h, b[o:o+len(key)])
}

// insertKey is insert of k's encoding, which it writes straight into the
// node: the commit path encodes each key once, with no copy.
func (s *skiplist) insertKey(k cell.Key, value []byte) {
	kl := cell.KeyLen(k)
	h := s.randomHeight()
	ref, b := s.allocNode(h, kl, len(value))
	o := nodeHeader + 8*h
	key := cell.AppendKey(b[o:o:o+kl], k)
	if len(key) != kl {
		panic(fmt.Sprintf("tablet: cell.KeyLen said %d bytes, the key has %d", kl, len(key)))
	}
	copy(b[o+kl:], value)
	s.link(ref, b, h, key)
}

// link links node ref (bytes b, height h, key key) into the list, or gives
// it back if an equal key is there.
func (s *skiplist) link(ref nodeRef, b []byte, h int, key []byte) {
	var prev [maxHeight]nodeRef
	if n := s.findSplice(key, &prev); n != 0 {
		chunks := *s.chunks.Load()
		if bytes.Equal(nodeKey(s.nodeBytes(&chunks, n)), key) {
			s.unalloc(ref, b)
			return
		}
	}
	if cur := int(s.height.Load()); h > cur {
		for l := cur; l < h; l++ {
			prev[l] = 0
		}
		s.height.Store(int32(h))
	}
	chunks := *s.chunks.Load()
	for l := 0; l < h; l++ {
		var pt *atomic.Uint64
		if prev[l] == 0 {
			pt = &s.headTower[l]
		} else {
			pt = towerAt(s.nodeBytes(&chunks, prev[l]), l)
		}
		towerAt(b, l).Store(pt.Load())
		pt.Store(ref)
	}
	for l := 0; l < h; l++ {
		prev[l] = ref
	}
	s.splice, s.spliceSet = prev, true
	s.count.Add(1)
}

// skipIter iterates a skiplist within [lower, upper) (nil = unbounded). It
// sees entries inserted while it runs, which readers filter by sequence
// number.
type skipIter struct {
	s            *skiplist
	lower, upper []byte
	n            nodeRef
	nb           []byte // n's bytes
	chunks       [][]byte
}

func (it *skipIter) set(n nodeRef) bool {
	it.n, it.nb = n, nil
	if n == 0 {
		return false
	}
	it.nb = it.s.nodeBytes(&it.chunks, n)
	if it.upper != nil && bytes.Compare(nodeKey(it.nb), it.upper) >= 0 {
		it.n, it.nb = 0, nil
		return false
	}
	return true
}

func (it *skipIter) SeekGE(k []byte) bool {
	if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
		k = it.lower
	}
	return it.set(it.s.findGE(k, nil))
}

func (it *skipIter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	return it.set(it.s.headTower[0].Load())
}

func (it *skipIter) Next() bool {
	if it.n == 0 {
		return false
	}
	return it.set(towerAt(it.nb, 0).Load())
}

func (it *skipIter) Valid() bool   { return it.n != 0 }
func (it *skipIter) Key() []byte   { return nodeKey(it.nb) }
func (it *skipIter) Value() []byte { return nodeValue(it.nb) }
func (it *skipIter) Err() error    { return nil }
func (it *skipIter) Close() error  { it.n, it.nb = 0, nil; return nil }

// memtable holds a tablet's recent writes: one skiplist per family. The map
// is copy-on-write so readers never lock: lists are added or removed (by
// SetFamilies) under the commit mutex by storing a new map.
type memtable struct {
	lists  atomic.Pointer[map[string]*skiplist]
	maxSeq atomic.Uint64 // highest sequence number inserted
	bytes  atomic.Int64  // the size of all lists' arenas
}

func newMemtable() *memtable {
	m := &memtable{}
	empty := map[string]*skiplist{}
	m.lists.Store(&empty)
	return m
}

// list returns the family's skiplist, or nil.
func (m *memtable) list(family string) *skiplist { return (*m.lists.Load())[family] }

// listForInsert returns the family's skiplist, creating it. Commit mutex held.
func (m *memtable) listForInsertLocked(family string) *skiplist {
	cur := *m.lists.Load()
	if s := cur[family]; s != nil {
		return s
	}
	next := make(map[string]*skiplist, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	s := newSkiplist()
	next[family] = s
	m.lists.Store(&next)
	return s
}

// dropFamilyLocked forgets a family's entries. Commit mutex held.
func (m *memtable) dropFamilyLocked(family string) {
	cur := *m.lists.Load()
	if cur[family] == nil {
		return
	}
	next := make(map[string]*skiplist, len(cur))
	for k, v := range cur {
		if k != family {
			next[k] = v
		}
	}
	m.lists.Store(&next)
}

// insertBatchLocked inserts a batch's entries (encoding the keys and
// copying the values into the lists' arenas) and returns the bytes the
// arenas grew by. Commit mutex held.
func (m *memtable) insertBatchLocked(b *batch) int64 {
	var added int64
	for i := range b.entries {
		e := &b.entries[i]
		s := m.listForInsertLocked(e.family)
		before := s.bytes.Load()
		s.insertKey(e.key(b.row, b.seq), e.value)
		added += s.bytes.Load() - before
	}
	if b.seq > m.maxSeq.Load() {
		m.maxSeq.Store(b.seq)
	}
	m.bytes.Add(added)
	return added
}

func (m *memtable) empty() bool { return m.bytes.Load() == 0 }
