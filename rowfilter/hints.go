package rowfilter

import (
	"bytes"
	"maps"

	"github.com/tabuladb/tabula/cell"
)

// The planner hints say what the engine may leave out of a row before
// Apply without changing Apply's result. For a filter F and a restriction
// S of cells (to some families, or to a time range), the hint for F is an
// S with F(x) == F(x restricted to S) for every row x; any superset of
// such an S also works, so the analysis may over-approximate.
//
// It composes by tracking, per node, whether the filter commutes with every
// restriction of that sort: F(x|S) == F(x)|S. Per-cell filters and
// per-row key filters commute with both sorts; a cells-per-column limit
// commutes with family restrictions but not with time ones (dropping newer
// cells changes which are first); cells-per-row limits and offsets, and
// conditions, commute with neither.
//
//   - Chain: when F1..Fk-1 commute and Fk has hint S, the chain has hint S
//     (F1..Fk-1 on x|S give their output on x, restricted to S, and Fk
//     cannot tell the difference). A non-commuting element before any
//     restricting one leaves the chain unrestricted. A child that never
//     emits makes the whole chain emit nothing.
//   - Interleave: the union of the branches' hints.
//   - Condition: the union of the predicate's and both branches' hints,
//     so the predicate sees everything it needs.
//
// A Sink sends its input to the output, so whatever reaches it matters: a
// Sink is unrestricted and commutes with nothing, which stops a chain
// from taking a later child's hint. A chain's child that emits nothing
// makes the chain emit nothing only when no earlier child holds a Sink.
// Labels and row samples act on cells or whole rows and commute with both
// sorts (a row sample passes all its input or none).

// set is what a hint restricts cells to.
type set[T any] interface {
	union(T) T
	isEmpty() bool
}

// restriction is one node's hint of one sort.
type restriction[T set[T]] struct {
	all      bool // no restriction is known
	set      T    // with !all: F(x) == F(x|set)
	commutes bool // F(x|S) == F(x)|S for every S of this sort
	sink     bool // the subtree holds a Sink
}

func unrestricted[T set[T]](commutes bool) restriction[T] {
	return restriction[T]{all: true, commutes: commutes}
}

func chainHint[T set[T]](children []restriction[T], empty T) restriction[T] {
	commutes := true
	for _, c := range children {
		commutes = commutes && c.commutes
	}
	for _, c := range children {
		if !c.all && c.set.isEmpty() {
			return restriction[T]{set: empty, commutes: commutes}
		}
		if c.sink {
			break // it sends its input out: later children cannot empty the chain
		}
	}
	for _, c := range children {
		if !c.all {
			return restriction[T]{set: c.set, commutes: commutes}
		}
		if !c.commutes {
			break
		}
	}
	return unrestricted[T](commutes)
}

func interleaveHint[T set[T]](children []restriction[T], empty T) restriction[T] {
	r := restriction[T]{set: empty, commutes: true}
	for _, c := range children {
		r.commutes = r.commutes && c.commutes
		r.all = r.all || c.all
		if !r.all {
			r.set = r.set.union(c.set)
		}
	}
	if r.all {
		return unrestricted[T](r.commutes)
	}
	return r
}

func conditionHint[T set[T]](pred restriction[T], onTrue, onFalse *restriction[T], empty T) restriction[T] {
	parts := []restriction[T]{pred}
	for _, b := range []*restriction[T]{onTrue, onFalse} {
		if b != nil {
			parts = append(parts, *b)
		}
	}
	r := interleaveHint(parts, empty)
	r.commutes = false
	return r
}

// famSet is a set of family names.
type famSet = map[string]bool

type families famSet

func (a families) union(b families) families {
	out := make(families, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

func (a families) isEmpty() bool { return len(a) == 0 }

// span is the time range [start, end) in microseconds; end 0 means no
// upper bound.
type span struct {
	start, end int64
	empty      bool
}

func newSpan(start, end int64) span {
	return span{start: start, end: end, empty: end != 0 && end <= start}
}

func (a span) union(b span) span {
	switch {
	case a.empty:
		return b
	case b.empty:
		return a
	}
	out := span{start: min(a.start, b.start), end: max(a.end, b.end)}
	if a.end == 0 || b.end == 0 {
		out.end = 0
	}
	return out
}

func (a span) isEmpty() bool { return a.empty }

// parts gathers a sort of hint from a node's parts.
func parts[T set[T]](n *node, get func(*node) restriction[T]) (kids []restriction[T], pred restriction[T], onTrue, onFalse *restriction[T]) {
	for _, c := range n.children {
		kids = append(kids, get(c))
	}
	if n.pred != nil {
		pred = get(n.pred)
	}
	if n.onTrue != nil {
		r := get(n.onTrue)
		onTrue = &r
	}
	if n.onFalse != nil {
		r := get(n.onFalse)
		onFalse = &r
	}
	return kids, pred, onTrue, onFalse
}

func combine[T set[T]](n *node, get func(*node) restriction[T], empty T) restriction[T] {
	kids, pred, onTrue, onFalse := parts(n, get)
	var r restriction[T]
	switch n.kind {
	case KindChain:
		r = chainHint(kids, empty)
	case KindInterleave:
		r = interleaveHint(kids, empty)
	default: // KindCondition; Compile allows no Sink inside
		r = conditionHint(pred, onTrue, onFalse, empty)
	}
	r.sink = n.hasSink
	if r.sink {
		r.commutes = false
	}
	return r
}

// sinkHint is a Sink's hint of either sort: it needs all its input.
func sinkHint[T set[T]]() restriction[T] {
	return restriction[T]{all: true, commutes: false, sink: true}
}

func familyHint(n *node, f *Filter) restriction[families] {
	only := func(names families) restriction[families] { return restriction[families]{set: names, commutes: true} }
	switch n.kind {
	case KindChain, KindInterleave, KindCondition:
		return combine(n, func(c *node) restriction[families] { return c.fam }, families{})
	case KindBlock:
		return only(families{})
	case KindFamily:
		return only(families{n.family: true})
	case KindQualifierRange:
		if n.family != "" {
			return only(families{n.family: true})
		}
	case KindFamilyRegex:
		if names, ok := finiteMatches(f.Regex); ok {
			valid := families{}
			for name := range names {
				if cell.ValidateFamilyName(name) == nil && n.re.MatchString(name) {
					valid[name] = true
				}
			}
			return only(valid)
		}
	case KindCellsPerRowLimit, KindCellsPerRowOffset:
		return unrestricted[families](false)
	case KindSink:
		return sinkHint[families]()
	}
	return unrestricted[families](true)
}

func timeHint(n *node) restriction[span] {
	switch n.kind {
	case KindChain, KindInterleave, KindCondition:
		return combine(n, func(c *node) restriction[span] { return c.time }, span{empty: true})
	case KindBlock:
		return restriction[span]{set: span{empty: true}, commutes: true}
	case KindTimestampRange:
		return restriction[span]{set: newSpan(n.t0, n.t1), commutes: true}
	case KindCellsPerRowLimit, KindCellsPerRowOffset, KindCellsPerColumnLimit:
		return unrestricted[span](false)
	case KindSink:
		return sinkHint[span]()
	}
	return unrestricted[span](true)
}

// RowMayMatch reports whether the filter may emit cells for a row with this
// key. It is false only when it surely emits nothing: the row key fails a
// row key regex or prefix that every output passes through, or the filter
// blocks everything.
func (c *Compiled) RowMayMatch(row []byte) bool {
	if c == nil || c.root == nil {
		return true
	}
	toParent, toSink := c.root.mayEmit(row)
	return toParent || toSink
}

// mayEmit reports whether n may emit cells to its parent, and whether it
// may send cells to the output through a Sink, for a row with this key.
func (n *node) mayEmit(row []byte) (toParent, toSink bool) {
	switch n.kind {
	case KindBlock:
		return false, false
	case KindSink:
		return false, true
	case KindTimestampRange:
		return !newSpan(n.t0, n.t1).empty, false
	case KindRowKeyRegex:
		return n.re.Match(row), false
	case KindRowKeyPrefix:
		return bytes.HasPrefix(row, n.prefix), false
	case KindChain:
		// A child's sink sees input only if every earlier child emits.
		for _, c := range n.children {
			p, s := c.mayEmit(row)
			toSink = toSink || s
			if !p {
				return false, toSink
			}
		}
		return true, toSink
	case KindInterleave:
		for _, c := range n.children {
			p, s := c.mayEmit(row)
			toParent, toSink = toParent || p, toSink || s
		}
		return toParent, toSink
	case KindCondition:
		// No Sink inside a condition.
		if n.onFalse != nil {
			if p, _ := n.onFalse.mayEmit(row); p {
				return true, false
			}
		}
		if n.onTrue == nil {
			return false, false
		}
		pp, _ := n.pred.mayEmit(row)
		tp, _ := n.onTrue.mayEmit(row)
		return pp && tp, false
	}
	return true, false
}

// Families reports the families a read needs: when restricted is true,
// Apply gives the same result on a row holding only the cells of these
// families as on the whole row (only they can be emitted, and every
// Condition's predicate needs only them). An empty set means the filter
// emits nothing. names is the caller's to keep.
func (c *Compiled) Families() (names map[string]bool, restricted bool) {
	if c == nil || c.root == nil || c.root.fam.all {
		return nil, false
	}
	return maps.Clone(famSet(c.root.fam.set)), true
}

// TimeRange reports the timestamps a read needs: when restricted is true,
// Apply gives the same result on a row holding only its cells with a
// timestamp in [start, end) (end 0: no upper bound) as on the whole row.
// The restriction applies to the cells given to Apply, after the family's
// GC policy has been evaluated on all of them.
func (c *Compiled) TimeRange() (start, end int64, restricted bool) {
	if c == nil || c.root == nil || c.root.time.all || c.root.time.set.empty {
		return 0, 0, false
	}
	return c.root.time.set.start, c.root.time.set.end, true
}
