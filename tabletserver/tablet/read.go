package tablet

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/sstable"
)

// readState is what one read sees: a snapshot sequence number, the
// memtables (newest first) and a referenced version.
type readState struct {
	seq    uint64
	mems   []*memtable
	v      *version
	schema *schema
	now    int64
	// memsBuf backs mems in the usual case of at most one immutable
	// memtable, saving an allocation per read.
	memsBuf [2]*memtable
}

// acquire takes a read snapshot. The sequence number is read under t.mu,
// with the state: data only moves from memtable to SSTables by publishing
// a state that holds it (under t.mu), so everything up to seq is in the
// state taken. And every entry of the state's SSTables has a sequence
// number up to seq, since flushes and compactions wait for what they write
// to be visible first: a snapshot never sees a file whose entries are
// newer than it. That matters because those files hold entries that stand
// for older ones, whose sequence number they lost: a compaction keeps the
// newest write of a (column, timestamp) and drops the older ones, and a
// flush or compaction of an aggregate family merges the inputs of a cell
// into one entry with the newest input's sequence number. A snapshot
// taken before such an entry's sequence number (possible when seq was read
// before taking t.mu and a whole flush ran in between) would see none of
// it where it should have seen the older writes.
func (t *Tablet) acquire() (*readState, error) {
	t.mu.Lock()
	if t.cur == nil {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	st := &readState{}
	t.fillStateLocked(st, t.visibleSeq.Load())
	return st, nil
}

// acquireInto is acquire filling st.
func (t *Tablet) acquireInto(st *readState) error {
	t.mu.Lock()
	if t.cur == nil {
		t.mu.Unlock()
		return ErrClosed
	}
	t.fillStateLocked(st, t.visibleSeq.Load())
	return nil
}

// fillStateLocked fills st and unlocks t.mu.
func (t *Tablet) fillStateLocked(st *readState, seq uint64) {
	v := t.cur
	v.ref()
	st.seq, st.v = seq, v
	st.mems = append(st.memsBuf[:0], t.mem)
	for i := len(t.imm) - 1; i >= 0; i-- {
		st.mems = append(st.mems, t.imm[i].m)
	}
	t.mu.Unlock()
	st.schema, st.now = t.schema.Load(), t.clock()
}

func (s *readState) release() {
	if s.v != nil {
		s.v.unref()
		s.v = nil
	}
}

// rowUpper returns the exclusive upper bound of every key of the row whose
// prefix is rp (rp ends in the terminator 0x00 0x01).
func rowUpper(rp []byte) []byte {
	u := bytes.Clone(rp)
	u[len(u)-1]++
	return u
}

// span is a key range [lo, hi) (nil = unbounded) of a read; point spans are
// one row, read with bloom filters.
type span struct {
	lo, hi []byte
	point  bool
}

// intersect returns [max(lo1,lo2), min(hi1,hi2)) and whether it is non-empty.
func intersect(lo1, hi1, lo2, hi2 []byte) (lo, hi []byte, ok bool) {
	lo, hi = lo1, hi1
	if lo2 != nil && (lo == nil || bytes.Compare(lo2, lo) > 0) {
		lo = lo2
	}
	if hi2 != nil && (hi == nil || bytes.Compare(hi2, hi) < 0) {
		hi = hi2
	}
	return lo, hi, lo == nil || hi == nil || bytes.Compare(lo, hi) < 0
}

// familyCursor reads one family of a span: it forward, or rev for a
// reversed scan.
type familyCursor struct {
	name   string
	policy families.Policy
	agg    aggregation
	it     *mergeIter
	rev    *revCursor
}

// familyCursor returns the cursor of family name without its iterators:
// everything that says how the family's entries of a row assemble into
// cells. Forward and reversed reads both start from it, so that what the
// assembly needs (the GC policy, the value type that merges aggregate
// inputs) is set in one place for both.
func (s *readState) familyCursor(name string) familyCursor {
	fam := s.schema.byName[name]
	return familyCursor{name: name, policy: fam.Policy(s.now), agg: aggregation{vt: fam.ValueType}}
}

// openSpan opens a cursor per family over the span. fams restricts the
// families (nil = all of the schema). p, if not nil, provides the memory.
// pins, if not nil, are given to every SSTable iterator (sstable.Iter.SetPins).
func (s *readState) openSpan(sp span, fams map[string]bool, p *pointScratch, pins *sstable.Pins) []*familyCursor {
	var cs []*familyCursor
	if p != nil {
		cs = p.cs[:0]
		// Room for every iterator up front: a pointer handed out must
		// stay the one element the pool reuses (an open iterator copied
		// by growth would keep its block alive in the pool).
		nf := 0
		for _, name := range s.schema.names {
			nf += len(s.v.files[name])
		}
		nn := len(s.schema.names)
		p.ssts = slices.Grow(p.ssts[:0], nf)
		p.skips = slices.Grow(p.skips[:0], nn*len(s.mems))
		p.cursors = slices.Grow(p.cursors[:0], nn)
		p.merges = slices.Grow(p.merges[:0], nn)
	}
	for _, name := range s.schema.names {
		if fams != nil && !fams[name] {
			continue
		}
		var srcs []internalIter
		first := 0
		if p != nil {
			srcs, first = p.srcs, len(p.srcs)
		}
		for _, m := range s.mems {
			if l := m.list(name); l != nil {
				var it *skipIter
				if p != nil {
					p.skips = append(p.skips, skipIter{})
					it = &p.skips[len(p.skips)-1]
				} else {
					it = &skipIter{}
				}
				*it = skipIter{s: l, lower: sp.lo, upper: sp.hi}
				srcs = append(srcs, it)
			}
		}
		for i := range s.v.runs[name] {
			r := &s.v.runs[name][i]
			var f *tableFile
			switch {
			case sp.point && len(r.spans) > 0:
				// A point read needs the one file whose rows may hold
				// its row, and none outside its rows: such a file is
				// not even opened (tablefile.go).
				j := r.fileOf(sp.lo)
				if j < 0 {
					continue
				}
				f = r.files[j]
			case sp.point:
				f = r.files[0]
			default:
				fs := r.within(sp.lo, sp.hi)
				if len(fs) == 0 {
					continue
				}
				if len(fs) > 1 {
					// Scans are not pooled (p is nil).
					srcs = append(srcs, newRunIter(fs, sp.lo, sp.hi, false, pins))
					continue
				}
				f = fs[0]
			}
			lo, hi, ok := intersect(sp.lo, sp.hi, f.lower(), f.upper())
			if !ok {
				continue
			}
			rd, err := f.reader()
			if err != nil {
				// Reported by the family's merge at its first seek.
				srcs = append(srcs, errIter{err})
				continue
			}
			if sp.point && !rd.MayContainRow(sp.lo) {
				continue
			}
			if p != nil {
				// Reslice rather than append a zero Iter: InitIter
				// reuses the element's buffers (openSpan made room).
				p.ssts = p.ssts[:len(p.ssts)+1]
				it := &p.ssts[len(p.ssts)-1]
				rd.InitIter(it, lo, hi)
				it.SetPins(pins)
				srcs = append(srcs, it)
			} else {
				it := rd.NewIter(lo, hi)
				it.SetPins(pins)
				srcs = append(srcs, it)
			}
		}
		if p != nil {
			p.srcs = srcs
			srcs = srcs[first:len(srcs):len(srcs)]
		}
		if len(srcs) == 0 {
			continue
		}
		var c *familyCursor
		if p != nil {
			p.cursors = append(p.cursors, s.familyCursor(name))
			c = &p.cursors[len(p.cursors)-1]
			p.merges = append(p.merges, mergeIter{})
			m := &p.merges[len(p.merges)-1]
			first := len(p.heaps)
			p.heaps = slices.Grow(p.heaps, len(srcs))
			*m = mergeIter{srcs: srcs, heap: p.heaps[first : first : first+len(srcs)]}
			p.heaps = p.heaps[:first+len(srcs)]
			c.it = m
		} else {
			fc := s.familyCursor(name)
			fc.it = newMergeIter(srcs)
			c = &fc
		}
		c.it.SeekGE(sp.lo)
		cs = append(cs, c)
	}
	if p != nil {
		p.cs = cs
	}
	return cs
}

// pointScratch is the reusable memory of a point read: what the read builds
// to find the row, none of what it returns (the cells, row, qualifiers
// and values are fresh memory).
type pointScratch struct {
	st      readState
	sc      rowScanner
	enc     []byte // the row's encoded key, lo is its row prefix
	hi      []byte
	cs      []*familyCursor
	cursors []familyCursor
	srcs    []internalIter
	skips   []skipIter
	ssts    []sstable.Iter
	merges  []mergeIter
	heaps   []int
}

var pointPool = sync.Pool{New: func() any { return new(pointScratch) }}

// release drops every reference the scratch holds (so a pooled scratch
// keeps no memtable, file or block alive) and returns it to the pool. The
// iterators must be closed.
func (p *pointScratch) release() {
	p.st = readState{}
	entries := p.sc.buf.entries
	clear(entries[:cap(entries)])
	// The row prefix's copy is the scanner's own (never handed out); the
	// pins were released by the scanner's close.
	p.sc = rowScanner{buf: rowBuffer{entries: entries[:0]}, rp: p.sc.rp[:0], pins: p.sc.pins}
	clear(p.cs)
	p.cs = p.cs[:0]
	clear(p.cursors)
	p.cursors = p.cursors[:0]
	clear(p.srcs)
	p.srcs = p.srcs[:0]
	clear(p.skips)
	p.skips = p.skips[:0]
	// Closed SSTable iterators hold no references and keep their buffers.
	p.ssts = p.ssts[:0]
	clear(p.merges)
	p.merges = p.merges[:0]
	p.heaps = p.heaps[:0]
	pointPool.Put(p)
}

func closeCursors(cs []*familyCursor) error {
	var err error
	for _, c := range cs {
		var e error
		if c.rev != nil {
			e = c.rev.Close()
		} else {
			e = c.it.Close()
		}
		if e != nil && err == nil {
			err = e
		}
	}
	return err
}

// rowScanner yields the rows of one span.
type rowScanner struct {
	st     *readState
	cs     []*familyCursor
	filter *rowfilter.Compiled
	buf    rowBuffer
	rp     []byte // the current row's prefix (a copy: iterator keys move on)
	// slab holds the cells handed out; a row's cells are slab[rowStart:].
	// Cells are carved from slabs rather than allocated per row; a slab is
	// never written again once a row's cells in it are handed out.
	slab     []cell.Cell
	rowStart int
	// reuseCells (ReadOptions.ReuseCells) writes each row's cells over
	// the previous row's in slab, and lets the blocks the previous rows'
	// values came from be recycled: pins holds them until the next row.
	reuseCells bool
	pins       sstable.Pins
	calls      int
	progress   func() // ReadOptions.Progress; may be nil
	// reverse: the cursors are revCursors and rows come in descending
	// order (see reverse.go).
	reverse bool
	err     error
}

// Cell slabs grow geometrically from minCellSlab cells (a point read stays
// small) to maxCellSlab (a scan amortizes its allocations).
const (
	minCellSlab = 2
	maxCellSlab = 256
)

// readFamilies returns the families a filter restricts a read to (nil:
// all).
func readFamilies(filter *rowfilter.Compiled) map[string]bool {
	if filter == nil {
		return nil
	}
	names, restricted := filter.Families()
	if !restricted {
		return nil
	}
	if names == nil {
		names = map[string]bool{}
	}
	return names
}

// With reuseCells, the cells of a row and the bytes they point to are
// valid until the next row (ReadOptions.ReuseCells).
func (s *readState) newScanner(sp span, filter *rowfilter.Compiled, reuseCells bool) *rowScanner {
	r := &rowScanner{st: s, filter: filter, reuseCells: reuseCells}
	var pins *sstable.Pins
	if reuseCells {
		pins = &r.pins
		// Each row's decoded row and qualifiers go over the previous
		// row's: without it a scan allocated its rows' keys anew (16 MB
		// of fresh memory per 1M-row scan, each byte written once), which
		// the collector then had to clear away.
		r.buf.reuse = true
	}
	r.cs = s.openSpan(sp, readFamilies(filter), nil, pins)
	return r
}

// newReverseScanner is newScanner for a reversed scan of the span.
func (s *readState) newReverseScanner(sp span, filter *rowfilter.Compiled) *rowScanner {
	return &rowScanner{st: s, cs: s.openSpanReverse(sp, readFamilies(filter)), filter: filter, reverse: true}
}

// initPointScanner is newScanner for a point span, in p's memory.
func (s *readState) initPointScanner(p *pointScratch, sp span, filter *rowfilter.Compiled) *rowScanner {
	p.sc.st, p.sc.filter = s, filter
	// The row's values are copied out (one row: a few hundred bytes, in
	// the arena that holds its qualifiers anyway), so the blocks it was
	// read from are recycled when the read closes: random reads over a
	// table larger than the cache would otherwise allocate a block per
	// miss.
	p.sc.buf.copyValues = true
	p.sc.cs = s.openSpan(sp, readFamilies(filter), p, &p.sc.pins)
	return &p.sc
}

// appendCell adds the cell of entry e to the current row, moving the row's
// cells to a new slab when the current one is full. The cell's fields are
// set in the slab's slot, not built and copied there: a cell is 120 bytes,
// and a scan writes one per row.
func (r *rowScanner) appendCell(row []byte, family string, e *rawEntry) {
	if len(r.slab) == cap(r.slab) {
		cur := r.slab[r.rowStart:]
		n := min(max(2*cap(r.slab), minCellSlab), maxCellSlab)
		next := make([]cell.Cell, len(cur), max(n, 2*len(cur)))
		copy(next, cur)
		r.slab, r.rowStart = next, 0
	}
	r.slab = r.slab[:len(r.slab)+1]
	c := &r.slab[len(r.slab)-1]
	c.Row, c.Family, c.Qualifier, c.Timestamp, c.Value = row, family, e.key.Qualifier, e.key.Timestamp, e.value
	// A reused slot may hold a filter's labels from an earlier row.
	c.Labels = nil
}

// next returns the next row with cells left after GC and the filter: the
// lowest row left, or the highest in a reversed scan.
func (r *rowScanner) next(ctx context.Context) (row []byte, cells []cell.Cell, ok bool) {
	// The caller is done with the previous row (ReuseCells): the blocks
	// its values came from can be recycled. (Without ReuseCells nothing
	// is pinned: the blocks are never recycled.)
	r.pins.Release()
	for r.err == nil {
		// A cancelled context stops the scan within a few rows; checking
		// it for every row costs a lock per row for cancellable contexts.
		// Progress is reported at the same pace.
		if r.calls++; r.calls%16 == 1 {
			if err := ctx.Err(); err != nil {
				r.err = err
				return nil, nil, false
			}
			if r.progress != nil {
				r.progress()
			}
		}
		// rowKey is a key of the next row: any of its encoded keys, or
		// its prefix alone; from is the forward cursor it came from.
		var rowKey []byte
		from := -1
		for i, c := range r.cs {
			if r.reverse {
				if err := c.rev.Err(); err != nil {
					r.err = err
					return nil, nil, false
				}
				if p := c.rev.prefix(); p != nil && (rowKey == nil || bytes.Compare(p, rowKey) > 0) {
					rowKey = p
				}
				continue
			}
			if err := c.it.Err(); err != nil {
				r.err = err
				return nil, nil, false
			}
			if c.it.Valid() && (rowKey == nil || bytes.Compare(c.it.Key(), rowKey) < 0) {
				rowKey, from = c.it.Key(), i
			}
		}
		if rowKey == nil {
			return nil, nil, false
		}
		row, n, err := r.buf.startRow(rowKey)
		if err != nil {
			r.err = err
			return nil, nil, false
		}
		r.rp = append(r.rp[:0], rowKey[:n]...)
		rp := r.rp
		if r.filter != nil && !r.filter.RowMayMatch(row) {
			r.skipRow(rp)
			continue
		}
		if r.reuseCells {
			// The caller is done with the previous row's cells.
			r.slab = r.slab[:0]
		}
		r.rowStart = len(r.slab)
		for i, c := range r.cs {
			var it *mergeIter
			if r.reverse {
				if !bytes.Equal(c.rev.prefix(), rp) {
					continue
				}
				it = c.rev.entries(rp)
			} else {
				// The cursor rowKey came from is at the row: rp is its
				// key's prefix.
				if i != from && (!c.it.Valid() || !bytes.HasPrefix(c.it.Key(), rp)) {
					continue
				}
				it = c.it
			}
			if !r.addFamily(c, it, rp, row, !r.reverse) {
				return nil, nil, false
			}
			if r.reverse {
				c.rev.pass(rp)
			}
		}
		end := len(r.slab)
		cells = r.slab[r.rowStart:end:end]
		if r.filter != nil && len(cells) > 0 {
			cells = r.filter.Apply(row, cells)
		}
		if len(cells) > 0 {
			return row, cells, true
		}
		// Nothing handed out: the row's slab space can be used again.
		r.slab = r.slab[:r.rowStart]
	}
	return nil, nil, false
}

// skipRow moves every cursor past the row whose prefix is rp, unread.
func (r *rowScanner) skipRow(rp []byte) {
	if r.reverse {
		for _, c := range r.cs {
			c.rev.pass(rp)
		}
		return
	}
	up := rowUpper(rp)
	for _, c := range r.cs {
		if c.it.Valid() && bytes.HasPrefix(c.it.Key(), rp) {
			c.it.SeekGE(up)
		}
	}
}

// addFamily reads family c's entries of the row (prefix rp) from it, which
// stands at the row's first entry, and appends the cells left after
// deletes and the GC policy. It is the one assembly of a row's family for
// forward and reversed reads. atRow says that it is known to be valid at
// an entry of the row (the forward scan checked), so that the first entry
// is not compared with rp again. False (r.err set) on error: the row may
// be incomplete and must not be returned.
func (r *rowScanner) addFamily(c *familyCursor, it *mergeIter, rp, row []byte, atRow bool) bool {
	r.buf.startFamily()
	for atRow || (it.Valid() && bytes.HasPrefix(it.Key(), rp)) {
		atRow = false
		if err := r.buf.add(it.Key(), it.Value()); err != nil {
			r.err = err
			return false
		}
		it.Next()
	}
	if err := it.Err(); err != nil {
		r.err = err
		return false
	}
	name := c.name
	if es := r.buf.entries; len(es) == 1 {
		if simple, visible := assembleOne(&es[0], r.st.seq, &c.policy, c.agg, modeRead); simple {
			if visible {
				e := &es[0]
				r.appendCell(row, name, e)
			}
			return true
		}
	}
	assembleFamily(r.buf.entries, r.st.seq, c.policy, c.agg, modeRead, func(e *rawEntry) {
		r.appendCell(row, name, e)
	})
	return true
}

func (r *rowScanner) close() error {
	err := closeCursors(r.cs)
	r.cs = nil
	r.pins.Release()
	return err
}

// ReadRow returns the row's cells in read order after deletes, the GC
// policy and filter (nil = all); nil when the row has none. The cells'
// byte slices may share memory with the engine: do not modify them.
func (t *Tablet) ReadRow(ctx context.Context, row []byte, filter *rowfilter.Filter) ([]cell.Cell, error) {
	if err := t.checkRow(row); err != nil {
		return nil, err
	}
	var c *rowfilter.Compiled
	if filter != nil {
		var err error
		if c, err = rowfilter.Compile(filter); err != nil {
			return nil, err
		}
	}
	return t.readRowCompiled(ctx, row, c)
}

func (t *Tablet) readRowCompiled(ctx context.Context, row []byte, filter *rowfilter.Compiled) ([]cell.Cell, error) {
	p := pointPool.Get().(*pointScratch)
	defer p.release()
	st := &p.st
	if err := t.acquireInto(st); err != nil {
		return nil, err
	}
	defer st.release()
	// cell.EncodeRow(row), in the scratch's memory: the row prefix that
	// heads the encoding of a family tombstone of the row.
	p.enc = cell.AppendKey(p.enc[:0], cell.Key{Row: row, Kind: cell.KindDeleteFamily})
	lo, err := cell.RowPrefix(p.enc)
	if err != nil {
		return nil, err
	}
	p.hi = append(p.hi[:0], lo...)
	p.hi[len(p.hi)-1]++ // rowUpper
	sc := st.initPointScanner(p, span{lo: lo, hi: p.hi, point: true}, filter)
	_, cells, _ := sc.next(ctx)
	cerr := sc.close()
	if sc.err != nil {
		return nil, sc.err
	}
	if cerr != nil {
		return nil, cerr
	}
	return cells, nil
}

// RowRange is a row range [Start, End); a nil Start is the tablet's start,
// a nil End the tablet's end.
type RowRange struct{ Start, End []byte }

// ReadOptions say which rows a RowIterator reads.
type ReadOptions struct {
	// Keys and Ranges are the row set; both empty means the whole tablet.
	// Rows outside the tablet's range are ignored.
	Keys   [][]byte
	Ranges []RowRange
	// Filter is applied to every row; nil passes everything.
	Filter *rowfilter.Filter
	// Limit bounds the rows returned; 0 means no limit. In a reversed
	// read it counts from the highest row down.
	Limit int64
	// Reverse reads the rows in descending key order (Cloud Bigtable's
	// ReadRowsRequest.reversed); the cells of each row keep the read
	// order, and the filter applies to each row as in a forward read.
	// The rows are walked backwards in every memtable and SSTable, not
	// read forward and reversed: memory stays bounded as in a forward
	// scan. The default is false.
	Reverse bool
	// Progress, when set, is called on the reading goroutine every few
	// rows the scan passes over, including rows that deletes or the
	// filter drop, so that the caller can show that a selective scan is
	// still working (the tablet server's stream heartbeats). It must be
	// cheap and must not use the iterator. The default is nil.
	Progress func()
	// ReuseCells lets the iterator write each row's cells over the
	// previous row's and recycle the blocks their values were read from:
	// the slice Cells returns and the bytes its cells point to (row,
	// qualifiers, values) are valid only until the next call of Next (or
	// Close), as a scan that converts or copies each row at once needs
	// (the tablet server's stream). It spares a scan the allocation of
	// every cell and of every block it reads (docs/CONTRACTS.md §3). The
	// default is false: cells and their bytes stay valid after Next and
	// Close.
	ReuseCells bool
}

// spans turns a row set into ascending, disjoint key spans clipped to the
// tablet's range.
func (t *Tablet) spans(opts ReadOptions) []span {
	var tlo, thi []byte
	if t.start != nil {
		tlo = cell.EncodeRow(t.start)
	}
	if t.end != nil {
		thi = cell.EncodeRow(t.end)
	}
	var sps []span
	if len(opts.Keys) == 0 && len(opts.Ranges) == 0 {
		return []span{{lo: tlo, hi: thi}}
	}
	for _, k := range opts.Keys {
		if len(k) == 0 || !t.inRange(k) {
			continue
		}
		lo := cell.EncodeRow(k)
		sps = append(sps, span{lo: lo, hi: rowUpper(lo), point: true})
	}
	for _, r := range opts.Ranges {
		var lo, hi []byte
		if r.Start != nil {
			lo = cell.EncodeRow(r.Start)
		}
		if r.End != nil {
			hi = cell.EncodeRow(r.End)
		}
		lo, hi, ok := intersect(lo, hi, tlo, thi)
		if ok {
			sps = append(sps, span{lo: lo, hi: hi})
		}
	}
	sort.SliceStable(sps, func(i, j int) bool { return compareLower(sps[i].lo, sps[j].lo) < 0 })
	var out []span
	for _, s := range sps {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.hi == nil || bytes.Compare(s.lo, p.hi) < 0 { // overlap
				if p.point && s.point && bytes.Equal(p.lo, s.lo) {
					continue
				}
				if p.hi != nil && (s.hi == nil || bytes.Compare(s.hi, p.hi) > 0) {
					p.hi = s.hi
				}
				p.point = false
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// compareLower compares lower bounds, nil being the smallest.
func compareLower(a, b []byte) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return bytes.Compare(a, b)
}

// RowIterator yields rows in key order (descending with
// ReadOptions.Reverse); rows left with no cells are skipped. Not safe for concurrent use; Close it exactly once.
type RowIterator struct {
	ctx    context.Context
	st     *readState
	spans  []span
	filter *rowfilter.Compiled
	limit  int64
	count  int64
	sc     *rowScanner
	row    []byte
	cells  []cell.Cell
	err    error
	done   bool
	// progress is ReadOptions.Progress, handed to each span's scanner.
	progress func()
	// reuseCells is ReadOptions.ReuseCells, handed to each span's scanner.
	reuseCells bool
	reverse    bool // spans are in descending order, read backwards
}

// NewRowIterator starts a read of the row set in opts at the current
// snapshot. The iterator keeps the files it reads open until Close.
func (t *Tablet) NewRowIterator(ctx context.Context, opts ReadOptions) (*RowIterator, error) {
	if opts.Limit < 0 {
		return nil, cell.Invalidf("row limit %d is negative; give 0 for no limit", opts.Limit)
	}
	for _, k := range opts.Keys {
		if err := cell.ValidateRow(k); err != nil {
			return nil, err
		}
	}
	for _, r := range opts.Ranges {
		if r.Start != nil && r.End != nil && bytes.Compare(r.Start, r.End) > 0 {
			return nil, cell.Invalidf("row range [%q, %q) has its start after its end", r.Start, r.End)
		}
	}
	var c *rowfilter.Compiled
	if opts.Filter != nil {
		var err error
		if c, err = rowfilter.Compile(opts.Filter); err != nil {
			return nil, err
		}
	}
	st, err := t.acquire()
	if err != nil {
		return nil, err
	}
	sps := t.spans(opts)
	if opts.Reverse {
		slices.Reverse(sps)
	}
	return &RowIterator{ctx: ctx, st: st, spans: sps, filter: c, limit: opts.Limit, progress: opts.Progress, reverse: opts.Reverse, reuseCells: opts.ReuseCells}, nil
}

// Next moves to the next row; false at the end or on error.
func (it *RowIterator) Next() bool {
	if it.done || it.err != nil {
		return false
	}
	if it.limit > 0 && it.count >= it.limit {
		it.finish()
		return false
	}
	for {
		if it.sc == nil {
			if len(it.spans) == 0 {
				it.finish()
				return false
			}
			if sp := it.spans[0]; it.reverse && !sp.point {
				it.sc = it.st.newReverseScanner(sp, it.filter)
			} else {
				// A point span is one row: read forward, with bloom
				// filters, in either direction.
				it.sc = it.st.newScanner(sp, it.filter, it.reuseCells)
			}
			it.sc.progress, it.sc.reuseCells = it.progress, it.reuseCells
			it.spans = it.spans[1:]
		}
		row, cells, ok := it.sc.next(it.ctx)
		if ok {
			it.row, it.cells = row, cells
			it.count++
			return true
		}
		err := it.sc.err
		if cerr := it.sc.close(); err == nil {
			err = cerr
		}
		it.sc = nil
		if err != nil {
			it.err = err
			it.finish()
			return false
		}
	}
}

func (it *RowIterator) finish() {
	it.done = true
	it.row, it.cells = nil, nil
	if it.sc != nil {
		if err := it.sc.close(); err != nil && it.err == nil {
			it.err = err
		}
		it.sc = nil
	}
	it.st.release()
}

// Row returns the current row key.
func (it *RowIterator) Row() []byte { return it.row }

// Cells returns the current row's cells in read order. They stay valid
// after Next and Close, unless ReadOptions.ReuseCells was set: then the
// slice and the bytes its cells point to are valid until the next call of
// Next or Close (the blocks the values are in are then recycled). Their
// byte slices may share memory with the engine (values are not copied out
// of blocks and memtables): do not modify them.
func (it *RowIterator) Cells() []cell.Cell { return it.cells }

// Err returns the error that stopped the iteration, if any.
func (it *RowIterator) Err() error { return it.err }

// Close releases the iterator's snapshot and returns its error.
func (it *RowIterator) Close() error {
	if !it.done {
		it.finish()
	}
	return it.err
}
