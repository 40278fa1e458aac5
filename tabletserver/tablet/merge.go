package tablet

import (
	"bytes"
	"container/heap"
)

// internalIter is the iterator contract shared by memtable and SSTable
// iterators (STYLE habit 5).
type internalIter interface {
	SeekGE(key []byte) bool
	Next() bool
	Valid() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// mergeIter merges sources by key. Sources hold disjoint entries in
// practice (a key carries its sequence number); equal keys are emitted once,
// from the first source holding them.
type mergeIter struct {
	srcs []internalIter
	h    mergeHeap
	prev []byte // the current key's copy, to skip duplicates
	err  error
}

type mergeHeap struct {
	srcs []internalIter
	idx  []int
}

func (h *mergeHeap) Len() int { return len(h.idx) }
func (h *mergeHeap) Less(i, j int) bool {
	c := bytes.Compare(h.srcs[h.idx[i]].Key(), h.srcs[h.idx[j]].Key())
	if c != 0 {
		return c < 0
	}
	return h.idx[i] < h.idx[j]
}
func (h *mergeHeap) Swap(i, j int) { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *mergeHeap) Push(x any)    { h.idx = append(h.idx, x.(int)) }
func (h *mergeHeap) Pop() any {
	n := len(h.idx) - 1
	x := h.idx[n]
	h.idx = h.idx[:n]
	return x
}

func newMergeIter(srcs []internalIter) *mergeIter {
	return &mergeIter{srcs: srcs, h: mergeHeap{srcs: srcs}}
}

// SeekGE positions every source at the first key >= k.
func (m *mergeIter) SeekGE(k []byte) bool {
	m.h.idx = m.h.idx[:0]
	m.err = nil
	for i, s := range m.srcs {
		if s.SeekGE(k) {
			m.h.idx = append(m.h.idx, i)
		} else if err := s.Error(); err != nil {
			m.err = err
			m.h.idx = m.h.idx[:0]
			return false
		}
	}
	heap.Init(&m.h)
	return m.Valid()
}

func (m *mergeIter) Valid() bool { return m.err == nil && len(m.h.idx) > 0 }

func (m *mergeIter) Key() []byte   { return m.srcs[m.h.idx[0]].Key() }
func (m *mergeIter) Value() []byte { return m.srcs[m.h.idx[0]].Value() }
func (m *mergeIter) Error() error  { return m.err }

// advanceTop moves the top source on.
func (m *mergeIter) advanceTop() bool {
	s := m.srcs[m.h.idx[0]]
	if s.Next() {
		heap.Fix(&m.h, 0)
		return true
	}
	if err := s.Error(); err != nil {
		m.err = err
		return false
	}
	heap.Pop(&m.h)
	return true
}

// Next moves to the next distinct key.
func (m *mergeIter) Next() bool {
	if !m.Valid() {
		return false
	}
	m.prev = append(m.prev[:0], m.Key()...)
	for {
		if !m.advanceTop() {
			return false
		}
		if !m.Valid() || !bytes.Equal(m.Key(), m.prev) {
			return m.Valid()
		}
	}
}

func (m *mergeIter) Close() error {
	var err error
	for _, s := range m.srcs {
		if e := s.Close(); e != nil && err == nil {
			err = e
		}
	}
	m.srcs = nil
	m.h.idx = nil
	return err
}
