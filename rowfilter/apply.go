package rowfilter

import (
	"bytes"
	"slices"

	"github.com/tabuladb/tabula/cell"
)

// Apply filters one row: cells are all of the row's cells (of the families
// read), in read order (family, qualifier ascending, timestamp descending).
// It returns the cells to emit, in read order, or nil when there are none.
// They are the root filter's output pooled with the cells that reached a
// Sink; of cells that compare equal (same column and timestamp), the
// root's come first, then each sink's, in the order the sinks were reached.
//
// Apply never modifies cells or their contents; the result may share the
// backing array and the byte slices of cells, so neither may be modified
// while the other is in use. (The result's capacity is its length, so
// appending to it never writes into cells.) The Labels of a labelled cell
// may be shared with other cells: treat them as read-only.
func (c *Compiled) Apply(row []byte, cells []cell.Cell) []cell.Cell {
	if len(cells) == 0 {
		return nil
	}
	if c == nil || c.root == nil {
		return cells[:len(cells):len(cells)]
	}
	e := evaluation{row: row, rand: c.rand}
	out := c.root.apply(&e, cells)
	if len(e.sunk) > 0 {
		out = pool(append([][]cell.Cell{out}, e.sunk...))
	}
	if len(out) == 0 {
		return nil
	}
	return out[:len(out):len(out)]
}

// evaluation is the state of one Apply.
type evaluation struct {
	row  []byte
	rand func() float64 // RowSample's draws
	sunk [][]cell.Cell  // what reached each Sink, in order
}

// apply returns what n emits to its parent for the input in.
func (n *node) apply(e *evaluation, in []cell.Cell) []cell.Cell {
	if len(in) == 0 {
		return nil // no filter emits a cell it was not given, nor draws
	}
	switch n.kind {
	case KindPass:
		return in
	case KindBlock:
		return nil
	case KindChain:
		for _, c := range n.children {
			if in = c.apply(e, in); len(in) == 0 {
				return nil
			}
		}
		return in
	case KindInterleave:
		outs := make([][]cell.Cell, 0, len(n.children))
		for _, c := range n.children {
			outs = append(outs, c.apply(e, in))
		}
		return pool(outs)
	case KindCondition:
		// Only whether the predicate emits matters: its cells (and labels)
		// never reach the output.
		branch := n.onFalse
		if len(n.pred.apply(e, in)) > 0 {
			branch = n.onTrue
		}
		if branch == nil {
			return nil
		}
		return branch.apply(e, in)
	case KindSink:
		e.sunk = append(e.sunk, in)
		return nil
	case KindRowSample:
		if e.rand() < n.p {
			return in
		}
		return nil
	case KindRowKeyRegex:
		if n.re.Match(e.row) {
			return in
		}
		return nil
	case KindRowKeyPrefix:
		if bytes.HasPrefix(e.row, n.prefix) {
			return in
		}
		return nil
	case KindFamily:
		return keep(in, func(c *cell.Cell) bool { return c.Family == n.family })
	case KindFamilyRegex:
		var lastFamily string
		var lastMatch, known bool
		return keep(in, func(c *cell.Cell) bool {
			if !known || c.Family != lastFamily {
				lastFamily, lastMatch, known = c.Family, n.re.MatchString(c.Family), true
			}
			return lastMatch
		})
	case KindQualifierRegex:
		return keep(in, func(c *cell.Cell) bool { return n.re.Match(c.Qualifier) })
	case KindQualifierRange:
		return keep(in, func(c *cell.Cell) bool {
			return (n.family == "" || c.Family == n.family) && n.rng.contains(c.Qualifier)
		})
	case KindTimestampRange:
		return keep(in, func(c *cell.Cell) bool {
			return c.Timestamp >= n.t0 && (n.t1 == 0 || c.Timestamp < n.t1)
		})
	case KindValueRegex:
		return keep(in, func(c *cell.Cell) bool { return n.re.Match(c.Value) })
	case KindValueRange:
		return keep(in, func(c *cell.Cell) bool { return n.rng.contains(c.Value) })
	case KindCellsPerRowLimit:
		return in[:min(n.n, len(in))]
	case KindCellsPerRowOffset:
		if n.n >= len(in) {
			return nil
		}
		return in[n.n:]
	case KindCellsPerColumnLimit:
		count := 0
		for i := range in {
			if i == 0 || !sameColumn(&in[i], &in[i-1]) {
				count = 0
			}
			count++
			if count > n.n {
				// The first cell over the limit: from here on, copy.
				return n.columnLimitFrom(in, i, count)
			}
		}
		return in
	case KindStripValue:
		out := make([]cell.Cell, len(in))
		for i := range in {
			out[i] = in[i]
			out[i].Value = nil
		}
		return out
	case KindLabel:
		out := make([]cell.Cell, len(in))
		for i := range in {
			out[i] = in[i]
			if len(in[i].Labels) == 0 {
				out[i].Labels = n.labels // len == cap: appending copies
			} else {
				out[i].Labels = append(slices.Clip(in[i].Labels), n.labels...)
			}
		}
		return out
	}
	panic("rowfilter: apply of unknown kind " + n.kind.String()) // Compile rejects unknown kinds
}

// columnLimitFrom finishes a cells-per-column limit whose first dropped cell
// is in[i], with count cells of its column seen so far.
func (n *node) columnLimitFrom(in []cell.Cell, i, count int) []cell.Cell {
	out := slices.Clone(in[:i])
	for i++; i < len(in); i++ {
		if !sameColumn(&in[i], &in[i-1]) {
			count = 0
		}
		count++
		if count <= n.n {
			out = append(out, in[i])
		}
	}
	return out
}

func sameColumn(a, b *cell.Cell) bool {
	return a.Family == b.Family && bytes.Equal(a.Qualifier, b.Qualifier)
}

// keep returns the cells ok accepts. When it accepts all of them it returns
// in itself; it copies only from the first rejected cell on.
func keep(in []cell.Cell, ok func(*cell.Cell) bool) []cell.Cell {
	for i := range in {
		if ok(&in[i]) {
			continue
		}
		out := slices.Clone(in[:i])
		for j := i + 1; j < len(in); j++ {
			if ok(&in[j]) {
				out = append(out, in[j])
			}
		}
		return out
	}
	return in
}

// pool merges outputs, each in read order already, into one in read
// order. Cells that compare equal keep the order of outs, and duplicates
// stay, as Bigtable's interleave does.
func pool(outs [][]cell.Cell) []cell.Cell {
	total, nonEmpty, last := 0, 0, -1
	for i, o := range outs {
		if len(o) > 0 {
			total += len(o)
			nonEmpty++
			last = i
		}
	}
	switch nonEmpty {
	case 0:
		return nil
	case 1:
		return outs[last]
	}
	merged := make([]cell.Cell, 0, total)
	for _, o := range outs {
		merged = append(merged, o...)
	}
	slices.SortStableFunc(merged, func(a, b cell.Cell) int { return cell.Compare(&a, &b) })
	return merged
}

// contains reports whether v lies within the range.
func (r *byteRange) contains(v []byte) bool {
	if c := bytes.Compare(v, r.start); c < 0 || (c == 0 && r.startOpen) {
		return false
	}
	if r.hasEnd {
		if c := bytes.Compare(v, r.end); c > 0 || (c == 0 && r.endOpen) {
			return false
		}
	}
	return true
}
