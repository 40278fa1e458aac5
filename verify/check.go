package verify

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// Checker compares a table's contents with the history of the writes
// made to it. Feed it every row of the table, in any order, with Observe,
// then call Finish:
//
//	c := verify.NewChecker(h, verify.CheckOptions{})
//	err := verify.ScanTable(ctx, tbl, func(r client.Row) error { c.Observe(r); return nil })
//	rep := c.Finish()
//
// It proves, or reports the violation of:
//
//   - every acknowledged list node is present, with the pointer and
//     payload it was written with, and no row is present that no
//     operation of the history wrote (or that a refused write wrote);
//   - every list pointer names a node the history attempted;
//   - each counter's final value lies in [acked, acked+unknown]
//     increments, no two versions or acknowledged increments carry the
//     same value, and the counter never went backwards;
//   - each chain's versions step 1, 2, … N with no duplicate or skipped
//     step, each written by a CAS that was acknowledged or may have been
//     applied, and every acknowledged CAS is there;
//   - the read-modify-write and check-and-mutate histories, closed by the
//     final read, are linearizable (porcupine, see linearize.go).
type Checker struct {
	h   *History
	o   CheckOptions
	rep *Report

	lists    map[string]*listRow
	counters map[string]*sharedHist
	chains   map[string]*sharedHist
	// horizon is after every finite time in the history: the final reads
	// happen there.
	horizon int64
}

// CheckOptions configure a Checker.
type CheckOptions struct {
	// LinearizabilityTimeout bounds the linearizability check of one row;
	// a row whose check runs out is reported inconclusive. The default is
	// 60s.
	LinearizabilityTimeout time.Duration
	// VisualizeDir, if set, receives a porcupine HTML visualization of
	// every row whose history is not linearizable. The default is none.
	VisualizeDir string
	// MaxExamples caps the violations listed per kind (all are counted).
	// The default is 20.
	MaxExamples int
}

// listRow is what the history says of one list row, and what the table
// holds.
type listRow struct {
	ops     []*Op // attempts (more than one only if random keys collided)
	present bool
	prev    string // the pointer stored in the table
}

// sharedHist is the history of one counter or chain row and its final
// state in the table.
type sharedHist struct {
	ops     []*Op
	present bool
	// versions are the row's values newest first: counts (counters) or
	// steps (chains).
	versions []int64
	// tokens of a chain's versions, newest first.
	tokens []string
}

// NewChecker indexes h.
func NewChecker(h *History, o CheckOptions) *Checker {
	if o.LinearizabilityTimeout <= 0 {
		o.LinearizabilityTimeout = 60 * time.Second
	}
	if o.MaxExamples <= 0 {
		o.MaxExamples = 20
	}
	c := &Checker{h: h, o: o, rep: newReport(o.MaxExamples),
		lists: map[string]*listRow{}, counters: map[string]*sharedHist{}, chains: map[string]*sharedHist{}}
	for i := range h.Ops {
		op := &h.Ops[i]
		c.horizon = max(c.horizon, op.Call, op.Return)
		c.rep.countOp(op)
		switch op.Kind {
		case KindList:
			lr := c.lists[op.Row]
			if lr == nil {
				lr = &listRow{}
				c.lists[op.Row] = lr
			}
			lr.ops = append(lr.ops, op)
		case KindIncr:
			shared(c.counters, op.Row).ops = append(shared(c.counters, op.Row).ops, op)
		case KindCAS, KindRead:
			shared(c.chains, op.Row).ops = append(shared(c.chains, op.Row).ops, op)
		}
	}
	c.horizon++
	c.rep.Torn = h.Torn
	return c
}

func shared(m map[string]*sharedHist, row string) *sharedHist {
	s := m[row]
	if s == nil {
		s = &sharedHist{}
		m[row] = s
	}
	return s
}

// Observe checks one row of the table. Each row must be observed at most
// once.
func (c *Checker) Observe(r client.Row) {
	row := string(r.Key)
	fams := map[string][]cell.Cell{}
	for _, cl := range r.Cells {
		fams[cl.Family] = append(fams[cl.Family], cl)
	}
	if len(r.Cells) == 0 {
		return
	}
	c.rep.RowsRead++
	switch {
	case c.lists[row] != nil:
		c.observeList(row, c.lists[row], fams)
	case c.counters[row] != nil:
		c.observeCounter(row, c.counters[row], fams)
	case c.chains[row] != nil:
		c.observeChain(row, c.chains[row], fams)
	default:
		c.rep.violate(VPhantom, "row %q (%d cells) was never written by any operation of the history", row, len(r.Cells))
	}
}

// onlyFamily reports a violation unless fams holds family want only.
func (c *Checker) onlyFamily(row, want string, fams map[string][]cell.Cell) bool {
	for f, cells := range fams {
		if f != want {
			c.rep.violate(VBadValue, "row %q has %d cells in family %s; only %s was written", row, len(cells), f, want)
			return false
		}
	}
	return true
}

func (c *Checker) observeList(row string, lr *listRow, fams map[string][]cell.Cell) {
	c.rep.ListRows++
	lr.present = true
	if !c.onlyFamily(row, familyList, fams) {
		return
	}
	applicable := slices.ContainsFunc(lr.ops, func(o *Op) bool { return o.Outcome != Failed })
	if !applicable {
		op := lr.ops[0]
		c.rep.violate(VPhantom, "list row %q is present, but its write failed (definitely not applied): %s", row, describe(op))
	}
	var prevCells, payloadCells []cell.Cell
	for _, cl := range fams[familyList] {
		switch {
		case bytes.Equal(cl.Qualifier, qualPrev):
			prevCells = append(prevCells, cl)
		case bytes.Equal(cl.Qualifier, qualPayload):
			payloadCells = append(payloadCells, cl)
		default:
			c.rep.violate(VBadValue, "list row %q has an unwritten column l:%q", row, cl.Qualifier)
		}
	}
	if len(prevCells) != 1 || len(payloadCells) != 1 {
		c.rep.violate(VBadValue, "list row %q has %d versions of l:prev and %d of l:p, want 1 and 1 (half-applied or duplicated write)",
			row, len(prevCells), len(payloadCells))
		if len(prevCells) == 0 {
			return
		}
	}
	lr.prev = string(prevCells[0].Value)
	if !slices.ContainsFunc(lr.ops, func(o *Op) bool { return o.Prev == lr.prev }) {
		c.rep.violate(VBadValue, "list row %q points to %q, but was written pointing to %q", row, lr.prev, lr.ops[0].Prev)
	}
	if lr.prev != "" && c.lists[lr.prev] == nil {
		c.rep.violate(VBadPointer, "list row %q points to %q, a row no operation attempted", row, lr.prev)
	}
	for _, cl := range append(prevCells, payloadCells...) {
		if cl.Timestamp != listTimestamp {
			c.rep.violate(VBadValue, "list row %q cell l:%s has timestamp %d, written with %d", row, cl.Qualifier, cl.Timestamp, listTimestamp)
		}
	}
	if len(payloadCells) > 0 {
		v := payloadCells[0].Value
		if !bytes.Equal(v, payload(row, len(v))) {
			c.rep.violate(VBadValue, "list row %q has a damaged payload (%d bytes)", row, len(v))
		}
	}
}

func (c *Checker) observeCounter(row string, sh *sharedHist, fams map[string][]cell.Cell) {
	c.rep.CounterRows++
	sh.present = true
	if !c.onlyFamily(row, familyCounter, fams) {
		return
	}
	for _, cl := range fams[familyCounter] {
		if !bytes.Equal(cl.Qualifier, qualCount) {
			c.rep.violate(VBadValue, "counter row %q has an unwritten column c:%q", row, cl.Qualifier)
			continue
		}
		n, err := decodeCount(cl.Value)
		if err != nil {
			c.rep.violate(VBadValue, "counter row %q: %v", row, err)
			continue
		}
		sh.versions = append(sh.versions, n)
	}
	seen := map[int64]int{}
	backwards := false
	for i, n := range sh.versions {
		seen[n]++
		if i > 0 && n > sh.versions[i-1] && !backwards {
			backwards = true
			c.rep.violate(VCounter, "counter row %q went backwards: an older version holds %d, the newer one %d", row, n, sh.versions[i-1])
		}
	}
	for _, n := range sortedKeys(seen) {
		if k := seen[n]; k > 1 {
			c.rep.violate(VDuplicate, "counter row %q has %d versions holding %d: increments applied twice from the same value (two owners?)", row, k, n)
		}
	}
}

func (c *Checker) observeChain(row string, sh *sharedHist, fams map[string][]cell.Cell) {
	c.rep.ChainRows++
	sh.present = true
	if !c.onlyFamily(row, familyChain, fams) {
		return
	}
	for _, cl := range fams[familyChain] {
		if !bytes.Equal(cl.Qualifier, qualStep) {
			c.rep.violate(VBadValue, "chain row %q has an unwritten column s:%q", row, cl.Qualifier)
			continue
		}
		step, tok, err := decodeStep(cl.Value)
		if err != nil {
			c.rep.violate(VBadValue, "chain row %q: %v", row, err)
			continue
		}
		sh.versions = append(sh.versions, step)
		sh.tokens = append(sh.tokens, tok)
	}
}

// Finish checks what needs every row and returns the report.
func (c *Checker) Finish() *Report {
	for row, lr := range c.lists {
		if lr.present {
			if lr.prev != "" && c.lists[lr.prev] != nil && !c.lists[lr.prev].present {
				c.rep.Undefined++
			}
			continue
		}
		for _, op := range lr.ops {
			if op.Outcome == Acked {
				c.rep.violate(VLost, "acknowledged list write of row %q is missing: %s", row, describe(op))
				break
			}
		}
	}
	for _, row := range sortedKeys(c.counters) {
		c.finishCounter(row, c.counters[row])
	}
	for _, row := range sortedKeys(c.chains) {
		c.finishChain(row, c.chains[row])
	}
	return c.rep
}

func (c *Checker) finishCounter(row string, sh *sharedHist) {
	var final int64
	if len(sh.versions) > 0 {
		final = sh.versions[0]
	}
	var acked, ambiguous int64
	values := map[int64][]*Op{}
	for _, op := range sh.ops {
		switch {
		case op.Outcome == Acked:
			acked++
			values[op.Value] = append(values[op.Value], op)
		case op.Ambiguous():
			ambiguous++
		}
	}
	if final < acked || final > acked+ambiguous {
		c.rep.violate(VCounter, "counter row %q ends at %d, outside [acked %d, acked+unknown %d]", row, final, acked, acked+ambiguous)
	}
	for _, v := range sortedKeys(values) {
		ops := values[v]
		if len(ops) > 1 {
			c.rep.violate(VDuplicate, "counter row %q: %d acknowledged increments returned the same value %d: %s and %s",
				row, len(ops), v, describe(ops[0]), describe(ops[1]))
		}
		if v < 1 || v > final {
			c.rep.violate(VCounter, "counter row %q: an acknowledged increment returned %d, but the counter ends at %d: %s", row, v, final, describe(ops[0]))
		}
	}
	c.linearizeCounter(row, sh, final, acked)
}

func (c *Checker) finishChain(row string, sh *sharedHist) {
	var final int64
	if len(sh.versions) > 0 {
		final = sh.versions[0]
	}
	// Versions, newest first, must be final, final-1, …, 1.
	ok := true
	for i, step := range sh.versions {
		if step == final-int64(i) {
			continue
		}
		ok = false
		if i > 0 && step == sh.versions[i-1] {
			c.rep.violate(VDuplicate, "chain row %q has step %d twice (tokens %s and %s): two CASes moved it from the same step", row, step, sh.tokens[i-1], sh.tokens[i])
		} else {
			c.rep.violate(VChain, "chain row %q skips from step %d to %d (versions newest first: %v)", row, step, sh.versions[i-1], sh.versions)
		}
		break
	}
	if n := len(sh.versions); ok && n > 0 && sh.versions[n-1] != 1 {
		c.rep.violate(VChain, "chain row %q starts at step %d: steps 1 to %d are missing", row, sh.versions[n-1], sh.versions[n-1]-1)
	}
	byToken := map[string]*Op{}
	for _, op := range sh.ops {
		if op.Kind == KindCAS {
			byToken[op.Token] = op
		}
	}
	inTable := map[string]bool{}
	for i, tok := range sh.tokens {
		inTable[tok] = true
		op := byToken[tok]
		switch {
		case op == nil:
			c.rep.violate(VPhantom, "chain row %q step %d was written by token %q, which no CAS of the history carries", row, sh.versions[i], tok)
		case op.Outcome == Failed:
			c.rep.violate(VPhantom, "chain row %q step %d was written by a CAS that failed (definitely not applied): %s", row, sh.versions[i], describe(op))
		case op.To != sh.versions[i]:
			c.rep.violate(VChain, "chain row %q step %d was written by a CAS to step %d: %s", row, sh.versions[i], op.To, describe(op))
		}
	}
	for _, op := range sh.ops {
		if op.Kind == KindCAS && op.Outcome == Acked && !inTable[op.Token] {
			c.rep.violate(VLost, "acknowledged CAS of chain row %q (step %d→%d) is missing; the chain ends at step %d: %s", row, op.From, op.To, final, describe(op))
		}
	}
	c.linearizeChain(row, sh, final, inTable)
}

// describe names an op for a violation message.
func describe(op *Op) string {
	s := fmt.Sprintf("op %d of session %d (%s, worker %d, %s", op.ID, op.Session, op.Kind, op.Worker, outcomeName(op.Outcome))
	if op.Kind == KindIncr && op.Outcome == Acked {
		s += fmt.Sprintf(", returned %d", op.Value)
	}
	if op.Return != 0 {
		s += fmt.Sprintf(", took %v", time.Duration(op.Return-op.Call).Round(time.Millisecond))
	}
	s += ", invoked at " + time.Unix(0, op.Call).UTC().Format("15:04:05.000") + " UTC"
	if op.Err != "" {
		s += ", error: " + op.Err
	}
	return s + ")"
}

func outcomeName(o Outcome) string {
	if o == Pending {
		return "pending"
	}
	return string(o)
}

func sortedKeys[V any, K interface{ ~string | ~int64 }](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
