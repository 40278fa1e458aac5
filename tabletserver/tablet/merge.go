package tablet

import (
	"bytes"

	"github.com/tabuladb/tabula/sstable"
)

// internalIter is the iterator contract shared by memtable and SSTable
// iterators (STYLE habit 5). Its error method is Err, Go's name for it
// (bufio.Scanner, sql.Rows, the client's RowIterator).
type internalIter interface {
	SeekGE(key []byte) bool
	Next() bool
	Valid() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// mergeIter merges sources by key. Sources hold disjoint entries in
// practice (a key carries its sequence number); equal keys are emitted once,
// from the first source holding them.
//
// The heap is hand-written rather than container/heap: a scan moves it once
// per entry, and the interface calls of container/heap cost more than the
// comparisons. With one source left (the common case after a compaction)
// Next is a plain call of that source: keys within one source are strictly
// increasing, so there is nothing to merge or deduplicate.
type mergeIter struct {
	srcs []internalIter
	heap []int  // indexes of the valid sources, a min-heap by (key, index)
	prev []byte // the current key's copy, to skip duplicates
	err  error
	// one is the only valid source when that is an SSTable iterator (the
	// common case after a compaction), called directly: a scan asks for
	// the key several times per entry, and the interface calls through
	// srcs showed in its profile.
	one *sstable.Iter
	// oneRun is the only valid source when that is a sorted run's
	// iterator: one is then the iterator of its current file, and the
	// run moves on to its next file when one ends.
	oneRun *runIter
}

// settleOne sets one from the heap.
func (m *mergeIter) settleOne() {
	m.one, m.oneRun = nil, nil
	if len(m.heap) == 1 && m.err == nil {
		switch s := m.srcs[m.heap[0]].(type) {
		case *sstable.Iter:
			m.one = s
		case *runIter:
			m.one, m.oneRun = &s.it, s
		}
	}
}

func newMergeIter(srcs []internalIter) *mergeIter {
	return &mergeIter{srcs: srcs, heap: make([]int, 0, len(srcs))}
}

// less orders heap positions i and j by key, then by source index.
func (m *mergeIter) less(i, j int) bool {
	a, b := m.heap[i], m.heap[j]
	if c := bytes.Compare(m.srcs[a].Key(), m.srcs[b].Key()); c != 0 {
		return c < 0
	}
	return a < b
}

// down restores the heap order below position i.
func (m *mergeIter) down(i int) {
	n := len(m.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && m.less(r, l) {
			c = r
		}
		if !m.less(c, i) {
			return
		}
		m.heap[i], m.heap[c] = m.heap[c], m.heap[i]
		i = c
	}
}

// SeekGE positions every source at the first key >= k.
func (m *mergeIter) SeekGE(k []byte) bool {
	m.heap = m.heap[:0]
	m.err = nil
	for i, s := range m.srcs {
		if s.SeekGE(k) {
			m.heap = append(m.heap, i)
		} else if err := s.Err(); err != nil {
			m.err = err
			m.heap = m.heap[:0]
			return false
		}
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	m.settleOne()
	return m.Valid()
}

func (m *mergeIter) Valid() bool { return m.err == nil && len(m.heap) > 0 }

func (m *mergeIter) Key() []byte {
	if m.one != nil {
		return m.one.Key()
	}
	return m.srcs[m.heap[0]].Key()
}

func (m *mergeIter) Value() []byte {
	if m.one != nil {
		return m.one.Value()
	}
	return m.srcs[m.heap[0]].Value()
}

func (m *mergeIter) Err() error { return m.err }

// advanceTop moves the top source on.
func (m *mergeIter) advanceTop() bool {
	s := m.srcs[m.heap[0]]
	if s.Next() {
		m.down(0)
		return true
	}
	if err := s.Err(); err != nil {
		m.err = err
		return false
	}
	n := len(m.heap) - 1
	m.heap[0] = m.heap[n]
	m.heap = m.heap[:n]
	m.down(0)
	return true
}

// Next moves to the next distinct key.
func (m *mergeIter) Next() bool {
	if !m.Valid() {
		return false
	}
	if m.one != nil {
		if m.one.Next() {
			return true
		}
		if r := m.oneRun; r != nil {
			if r.nextFile() {
				return true // one is r.it, now over the next file
			}
			return m.endOne(r)
		}
		return m.endOne(m.one)
	}
	if len(m.heap) == 1 {
		s := m.srcs[m.heap[0]]
		if s.Next() {
			return true
		}
		return m.endOne(s)
	}
	m.prev = append(m.prev[:0], m.Key()...)
	for {
		if !m.advanceTop() {
			m.settleOne()
			return false
		}
		if !m.Valid() || !bytes.Equal(m.Key(), m.prev) {
			m.settleOne()
			return m.Valid()
		}
	}
}

// endOne ends the merge when its only source s is exhausted or failed.
func (m *mergeIter) endOne(s internalIter) bool {
	m.one, m.oneRun = nil, nil
	if err := s.Err(); err != nil {
		m.err = err
		return false
	}
	m.heap = m.heap[:0]
	return false
}

func (m *mergeIter) Close() error {
	var err error
	for _, s := range m.srcs {
		if e := s.Close(); e != nil && err == nil {
			err = e
		}
	}
	m.srcs = nil
	m.heap = nil
	m.one, m.oneRun = nil, nil
	return err
}
