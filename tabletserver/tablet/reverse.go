package tablet

import (
	"bytes"

	"github.com/tabuladb/tabula/cell"
)

// Reversed scans (ReadOptions.Reverse) yield rows in descending key order
// while each row's cells keep the read order. Every source is walked
// backwards a row at a time: a revIter stands at one row and reads that
// row's entries forward, so the per-row assembly (rowScanner.addFamily:
// tombstones, sequence numbers, GC policy, then the filter) is the forward
// path's own. A revCursor merges one family's sources by descending row.

// revIter walks a source's rows from the last one down; at each row it
// iterates the row's entries forward (Valid, Key, Value, Next; Next is
// false past the row's last entry).
type revIter interface {
	// PrevRow moves to the row before the current one (the first call:
	// the last row) at its first entry; false when none is left or on
	// error.
	PrevRow() bool
	// RowPrefix is the current row's prefix (cell.RowPrefix).
	RowPrefix() []byte
	Valid() bool
	Key() []byte
	Value() []byte
	Next() bool
	Err() error
	Close() error
}

// findLT returns the last node with key < k (nil k: the last node), or 0.
func (s *skiplist) findLT(k []byte) nodeRef {
	chunks := *s.chunks.Load()
	var x nodeRef
	var xb []byte
	for level := int(s.height.Load()) - 1; level >= 0; level-- {
		for {
			var next nodeRef
			if xb == nil {
				next = s.headTower[level].Load()
			} else {
				next = towerAt(xb, level).Load()
			}
			if next == 0 {
				break
			}
			nb := s.nodeBytes(&chunks, next)
			if k != nil && bytes.Compare(nodeKey(nb), k) >= 0 {
				break
			}
			x, xb = next, nb
		}
	}
	return x
}

// skipRevIter walks a skiplist's rows backwards within [lower, upper). A
// skiplist has no backward links: each row is found by a descent to the
// last key below the previous row (O(log n) per row), then read forward.
type skipRevIter struct {
	s            *skiplist
	lower, upper []byte
	started, at  bool
	prefix       []byte // the current row's prefix, when at
	boundBuf     []byte
	fwd          skipIter
	err          error
}

func newSkipRevIter(s *skiplist, lower, upper []byte) *skipRevIter {
	return &skipRevIter{s: s, lower: lower, upper: upper}
}

func (it *skipRevIter) PrevRow() bool {
	// Rows start below bound (nil: unbounded).
	bound := it.upper
	if it.started {
		if !it.at {
			return false // the walk ended
		}
		it.boundBuf = append(it.boundBuf[:0], it.prefix...)
		bound = it.boundBuf
	}
	it.started, it.at = true, false
	it.fwd = skipIter{}
	if bound != nil && it.lower != nil && bytes.Compare(bound, it.lower) <= 0 {
		return false
	}
	n := it.s.findLT(bound)
	if n == 0 {
		return false
	}
	chunks := *it.s.chunks.Load()
	k := nodeKey(it.s.nodeBytes(&chunks, n))
	if it.lower != nil && bytes.Compare(k, it.lower) < 0 {
		return false
	}
	p, err := cell.RowPrefix(k)
	if err != nil {
		it.err = err
		return false
	}
	it.prefix = append(it.prefix[:0], p...)
	// Read the row forward, within the bounds. The entry found is below
	// upper and at or above the row's start, so the seek finds an entry.
	it.fwd = skipIter{s: it.s, lower: it.lower, upper: it.upper}
	it.fwd.SeekGE(it.prefix)
	it.at = true
	return true
}

func (it *skipRevIter) RowPrefix() []byte { return it.prefix }
func (it *skipRevIter) Valid() bool {
	return it.fwd.Valid() && bytes.HasPrefix(it.fwd.Key(), it.prefix)
}
func (it *skipRevIter) Key() []byte   { return it.fwd.Key() }
func (it *skipRevIter) Value() []byte { return it.fwd.Value() }
func (it *skipRevIter) Next() bool    { return it.fwd.Next() && it.Valid() }
func (it *skipRevIter) Err() error    { return it.err }
func (it *skipRevIter) Close() error  { it.fwd = skipIter{}; it.s = nil; return nil }

// rowEntries presents the current row of a revIter as an internalIter, so
// that a mergeIter merges the row's entries across sources. The source
// already stands at the row's first entry, and SeekGE only moves forward
// within the row (mergeIter.SeekGE is called with the row's prefix, which
// does not move it). Closing it closes nothing: the revCursor owns the
// source.
type rowEntries struct{ r revIter }

func (e *rowEntries) SeekGE(k []byte) bool {
	for e.r.Valid() && bytes.Compare(e.r.Key(), k) < 0 {
		e.r.Next()
	}
	return e.r.Valid()
}
func (e *rowEntries) Next() bool    { return e.r.Next() }
func (e *rowEntries) Valid() bool   { return e.r.Valid() }
func (e *rowEntries) Key() []byte   { return e.r.Key() }
func (e *rowEntries) Value() []byte { return e.r.Value() }
func (e *rowEntries) Err() error    { return e.r.Err() }
func (e *rowEntries) Close() error  { return nil }

// revCursor merges one family's sources by descending row: its current row
// is the highest row any source stands at.
type revCursor struct {
	srcs []revIter
	live []bool // srcs[i] stands at a row
	ents []rowEntries
	row  []internalIter // the entries of the sources at the current row
	m    mergeIter
	err  error
}

// newRevCursor starts every source at its last row.
func newRevCursor(srcs []revIter) *revCursor {
	c := &revCursor{srcs: srcs, live: make([]bool, len(srcs)), ents: make([]rowEntries, len(srcs))}
	for i, s := range srcs {
		c.ents[i] = rowEntries{s}
		c.advance(i)
	}
	return c
}

// advance moves source i to its previous row.
func (c *revCursor) advance(i int) {
	c.live[i] = c.srcs[i].PrevRow()
	if !c.live[i] {
		if err := c.srcs[i].Err(); err != nil && c.err == nil {
			c.err = err
		}
	}
}

// prefix returns the current row's prefix, or nil at the end.
func (c *revCursor) prefix() []byte {
	var best []byte
	for i, s := range c.srcs {
		if c.live[i] && (best == nil || bytes.Compare(s.RowPrefix(), best) > 0) {
			best = s.RowPrefix()
		}
	}
	return best
}

// entries returns the current row's entries (rp is its prefix) merged in
// key order, at the first one.
func (c *revCursor) entries(rp []byte) *mergeIter {
	c.row = c.row[:0]
	for i, s := range c.srcs {
		if c.live[i] && bytes.Equal(s.RowPrefix(), rp) {
			c.row = append(c.row, &c.ents[i])
		}
	}
	c.m = mergeIter{srcs: c.row, heap: c.m.heap[:0], prev: c.m.prev}
	c.m.SeekGE(rp)
	return &c.m
}

// pass moves the sources at row rp to their previous rows. rp must not
// alias a source's prefix (a copy).
func (c *revCursor) pass(rp []byte) {
	for i, s := range c.srcs {
		if c.live[i] && bytes.Equal(s.RowPrefix(), rp) {
			c.advance(i)
		}
	}
}

func (c *revCursor) Err() error { return c.err }

func (c *revCursor) Close() error {
	err := c.err
	for _, s := range c.srcs {
		if e := s.Close(); e != nil && err == nil {
			err = e
		}
	}
	c.srcs, c.ents, c.row = nil, nil, nil
	return err
}

// openSpanReverse opens a revCursor per family over the span, for a
// reversed scan; fams restricts the families (nil = all of the schema).
func (s *readState) openSpanReverse(sp span, fams map[string]bool) []*familyCursor {
	var cs []*familyCursor
	for _, name := range s.schema.names {
		if fams != nil && !fams[name] {
			continue
		}
		var srcs []revIter
		for _, m := range s.mems {
			if l := m.list(name); l != nil {
				srcs = append(srcs, newSkipRevIter(l, sp.lo, sp.hi))
			}
		}
		for i := range s.v.runs[name] {
			// A run's files are opened one each: a reversed read over
			// many of them is rare enough not to need runIter's twin.
			for _, f := range s.v.runs[name][i].within(sp.lo, sp.hi) {
				lo, hi, ok := intersect(sp.lo, sp.hi, f.lower(), f.upper())
				if !ok {
					continue
				}
				rd, err := f.reader()
				if err != nil {
					srcs = append(srcs, errIter{err})
					continue
				}
				srcs = append(srcs, rd.NewReverseIter(lo, hi))
			}
		}
		if len(srcs) == 0 {
			continue
		}
		c := s.familyCursor(name)
		c.rev = newRevCursor(srcs)
		cs = append(cs, &c)
	}
	return cs
}
