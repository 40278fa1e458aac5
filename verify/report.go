package verify

import (
	"fmt"
	"io"
	"strings"
)

// ViolationKind names what a violation broke.
type ViolationKind string

// The kinds of violations.
const (
	// VLost: an acknowledged write is missing.
	VLost ViolationKind = "lost"
	// VPhantom: something is present that no operation wrote, or that a
	// write refused (definitely not applied) wrote.
	VPhantom ViolationKind = "phantom"
	// VBadValue: a row holds cells other than those written.
	VBadValue ViolationKind = "bad-value"
	// VBadPointer: a list node points to a row nobody attempted.
	VBadPointer ViolationKind = "bad-pointer"
	// VCounter: a counter outside [acked, acked+unknown], or going back.
	VCounter ViolationKind = "counter"
	// VDuplicate: one value or step produced twice (an operation applied
	// twice, or two owners).
	VDuplicate ViolationKind = "duplicate"
	// VChain: a chain skips steps or holds a step its CAS did not write.
	VChain ViolationKind = "chain"
	// VLinearizability: a row's history is not linearizable.
	VLinearizability ViolationKind = "linearizability"
)

// Violation is one broken promise.
type Violation struct {
	Kind    ViolationKind
	Message string
}

// Report is what a check found.
type Report struct {
	// Ops counts the history's operations by kind and outcome; pending
	// ones (invoked, never returned) count as unknown.
	Ops     map[Kind]Counts
	NoMatch int64
	Torn    int

	// RowsRead counts the table's non-empty rows, and of them the list,
	// counter and chain rows the history explains.
	RowsRead, ListRows, CounterRows, ChainRows int64
	// Undefined counts present list nodes whose pointer names an absent
	// node (BigLinkedList's UNDEFINED). A node points only to its writer's
	// previous acknowledged node, so each one is also a VLost violation.
	Undefined int64
	// LinearizableRows counts the shared rows proven linearizable;
	// Inconclusive lists those whose check ran out of time.
	LinearizableRows int
	Inconclusive     []string

	// Counts holds the number of violations of each kind; Violations the
	// first MaxExamples of each.
	Counts     map[ViolationKind]int
	Violations []Violation
	maxEach    int
}

func newReport(maxEach int) *Report {
	return &Report{Ops: map[Kind]Counts{}, Counts: map[ViolationKind]int{}, maxEach: maxEach}
}

func (r *Report) countOp(op *Op) {
	c := r.Ops[op.Kind]
	switch {
	case op.Outcome == Acked:
		c.Acked++
	case op.Outcome == Failed:
		c.Failed++
		if op.NoMatch {
			r.NoMatch++
		}
	default:
		c.Unknown++
	}
	r.Ops[op.Kind] = c
}

func (r *Report) violate(k ViolationKind, format string, args ...any) {
	r.Counts[k]++
	if r.Counts[k] <= r.maxEach {
		r.Violations = append(r.Violations, Violation{Kind: k, Message: fmt.Sprintf(format, args...)})
	}
}

// ViolationCount is the number of violations of every kind.
func (r *Report) ViolationCount() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// OK reports whether the check found no violation.
func (r *Report) OK() bool { return r.ViolationCount() == 0 }

// Has reports whether the check found a violation of kind k.
func (r *Report) Has(k ViolationKind) bool { return r.Counts[k] > 0 }

// WriteTo prints the report as text.
func (r *Report) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "operations (acked / failed / unknown):\n")
	for _, k := range []Kind{KindList, KindIncr, KindCAS, KindRead} {
		c := r.Ops[k]
		extra := ""
		if k == KindCAS && r.NoMatch > 0 {
			extra = fmt.Sprintf(" (%d failed as predicate did not match)", r.NoMatch)
		}
		fmt.Fprintf(&b, "  %-5s %9d / %7d / %7d%s\n", k, c.Acked, c.Failed, c.Unknown, extra)
	}
	if r.Torn > 0 {
		fmt.Fprintf(&b, "  (%d torn history lines skipped)\n", r.Torn)
	}
	fmt.Fprintf(&b, "table: %d rows read: %d list nodes, %d counters, %d chains; %d pointers to absent nodes\n",
		r.RowsRead, r.ListRows, r.CounterRows, r.ChainRows, r.Undefined)
	fmt.Fprintf(&b, "linearizable: %d counter and chain rows", r.LinearizableRows)
	if len(r.Inconclusive) > 0 {
		fmt.Fprintf(&b, "; inconclusive (check timed out): %d rows %v", len(r.Inconclusive), r.Inconclusive)
	}
	b.WriteString("\n")
	if r.OK() {
		b.WriteString("violations: none\n")
	} else {
		fmt.Fprintf(&b, "violations: %d\n", r.ViolationCount())
		for _, k := range sortedKeys(r.Counts) {
			fmt.Fprintf(&b, "  %-16s %d\n", k, r.Counts[k])
		}
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "  [%s] %s\n", v.Kind, v.Message)
		}
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
