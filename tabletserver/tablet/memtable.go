package tablet

import (
	"bytes"
	"math/rand/v2"
	"sync/atomic"

	"github.com/tabuladb/tabula/cell"
)

// maxHeight bounds a skiplist tower; with p=1/4 it suits tens of millions of
// entries.
const maxHeight = 16

// nodeOverhead approximates a node's memory beyond its key and value.
const nodeOverhead = 64 + inlineBytes

type node struct {
	key, value []byte
	next       []atomic.Pointer[node]
	// tower backs next for nodes up to inlineHeight levels high (15 of 16
	// with p=1/4), saving an allocation per insert and a cache miss per
	// node visited by a search.
	tower [inlineHeight]atomic.Pointer[node]
	// inline holds the key when it fits (and the value too when both
	// fit), so that a search visiting the node finds the key in the same
	// allocation instead of taking a second cache miss to reach it.
	inline [inlineBytes]byte
}

const (
	inlineHeight = 2
	inlineBytes  = 64
)

// skiplist is a sorted map of encoded internal keys to values. Reads are
// lock-free (next pointers are atomic and a node is fully built before it is
// linked); inserts must be serialized by the caller (the tablet's commit
// mutex).
type skiplist struct {
	head   *node
	height atomic.Int32
	bytes  atomic.Int64
	rnd    *rand.Rand // insert-only, under the caller's lock
}

func newSkiplist() *skiplist {
	s := &skiplist{head: &node{next: make([]atomic.Pointer[node], maxHeight)}, rnd: rand.New(rand.NewPCG(rand.Uint64(), 1))}
	s.height.Store(1)
	return s
}

func (s *skiplist) randomHeight() int {
	h := 1
	for h < maxHeight && s.rnd.IntN(4) == 0 {
		h++
	}
	return h
}

// findGE returns the first node with key >= k, filling prev (if non-nil) with
// the last node < k at every level.
func (s *skiplist) findGE(k []byte, prev *[maxHeight]*node) *node {
	x := s.head
	var next *node
	// known is a node already found to be >= k: when the search drops a
	// level and meets it again (about once per level), it need not compare
	// keys again. Comparisons, mostly cache misses on keys, are what an
	// insert costs.
	var known *node
	for level := int(s.height.Load()) - 1; level >= 0; level-- {
		for {
			next = x.next[level].Load()
			if next == nil || next == known {
				break
			}
			if bytes.Compare(next.key, k) >= 0 {
				known = next
				break
			}
			x = next
		}
		if prev != nil {
			prev[level] = x
		}
	}
	return next
}

// insert adds key → value; the caller serializes inserts. key is copied;
// value is kept and must never be modified afterwards: readers hand it out
// without copying (see rowBuffer.add). An existing equal key keeps its
// first value (keys carry sequence numbers, so equal keys are the same
// entry).
func (s *skiplist) insert(key, value []byte) {
	var prev [maxHeight]*node
	if n := s.findGE(key, &prev); n != nil && bytes.Equal(n.key, key) {
		return
	}
	h := s.randomHeight()
	if cur := int(s.height.Load()); h > cur {
		for l := cur; l < h; l++ {
			prev[l] = s.head
		}
		s.height.Store(int32(h))
	}
	n := &node{value: value}
	if kl := len(key); kl <= inlineBytes {
		copy(n.inline[:], key)
		n.key = n.inline[:kl:kl]
	} else {
		n.key = bytes.Clone(key)
	}
	if h <= inlineHeight {
		n.next = n.tower[:h]
	} else {
		n.next = make([]atomic.Pointer[node], h)
	}
	for l := 0; l < h; l++ {
		n.next[l].Store(prev[l].next[l].Load())
		prev[l].next[l].Store(n)
	}
	s.bytes.Add(int64(len(key) + len(value) + nodeOverhead))
}

// skipIter iterates a skiplist within [lower, upper) (nil = unbounded). It
// sees entries inserted while it runs, which readers filter by sequence
// number.
type skipIter struct {
	s            *skiplist
	lower, upper []byte
	n            *node
}

func (it *skipIter) check() bool {
	if it.n != nil && it.upper != nil && bytes.Compare(it.n.key, it.upper) >= 0 {
		it.n = nil
	}
	return it.n != nil
}

func (it *skipIter) SeekGE(k []byte) bool {
	if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
		k = it.lower
	}
	it.n = it.s.findGE(k, nil)
	return it.check()
}

func (it *skipIter) First() bool {
	if it.lower != nil {
		return it.SeekGE(it.lower)
	}
	it.n = it.s.head.next[0].Load()
	return it.check()
}

func (it *skipIter) Next() bool {
	if it.n == nil {
		return false
	}
	it.n = it.n.next[0].Load()
	return it.check()
}

func (it *skipIter) Valid() bool   { return it.n != nil }
func (it *skipIter) Key() []byte   { return it.n.key }
func (it *skipIter) Value() []byte { return it.n.value }
func (it *skipIter) Error() error  { return nil }
func (it *skipIter) Close() error  { it.n = nil; return nil }

// memtable holds a tablet's recent writes: one skiplist per family. The map
// is copy-on-write so readers never lock: lists are added or removed (by
// SetFamilies) under the commit mutex by storing a new map.
type memtable struct {
	lists  atomic.Pointer[map[string]*skiplist]
	maxSeq atomic.Uint64 // highest sequence number inserted
	bytes  atomic.Int64  // approximate memory of all lists
	// scratch encodes keys for insert, which copies them. Commit mutex
	// held.
	scratch []byte
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

// insertBatchLocked inserts a batch's entries and returns the bytes added.
// The memtable keeps the entries' values, which must never be modified
// afterwards. Commit mutex held.
func (m *memtable) insertBatchLocked(b *batch) int64 {
	var added int64
	for i := range b.entries {
		e := &b.entries[i]
		s := m.listForInsertLocked(e.family)
		before := s.bytes.Load()
		m.scratch = cell.AppendKey(m.scratch[:0], e.key(b.row, b.seq))
		s.insert(m.scratch, e.value)
		added += s.bytes.Load() - before
	}
	if b.seq > m.maxSeq.Load() {
		m.maxSeq.Store(b.seq)
	}
	m.bytes.Add(added)
	return added
}

func (m *memtable) empty() bool { return m.bytes.Load() == 0 }
