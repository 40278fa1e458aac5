package verify

import (
	"slices"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// A scenario is a hand-made history and table, and the violations the
// checker must find in them (none: it must accept them).
type scenario struct {
	name string
	ops  []Op
	rows []client.Row
	want []ViolationKind
}

// Builders of history ops; times are small integers (nanoseconds) so the
// scenarios read as timelines.
func listOp(row, prev string, out Outcome, call, ret int64) Op {
	return Op{Kind: KindList, Row: row, Prev: prev, Outcome: out, Call: call, Return: ret}
}

func incr(row string, out Outcome, value, call, ret int64) Op {
	return Op{Kind: KindIncr, Row: row, Outcome: out, Value: value, Call: call, Return: ret}
}

func cas(row string, from int64, tok string, out Outcome, call, ret int64) Op {
	return Op{Kind: KindCAS, Row: row, From: from, To: from + 1, Token: tok, Outcome: out, NoMatch: out == Failed, Call: call, Return: ret}
}

func readOp(row string, step, call, ret int64) Op {
	return Op{Kind: KindRead, Row: row, Outcome: Acked, Value: step, Call: call, Return: ret}
}

// listRowOf is the row a list write of row → prev leaves.
func listRowOf(row, prev string) client.Row {
	return client.Row{Key: []byte(row), Cells: []cell.Cell{
		{Row: []byte(row), Family: familyList, Qualifier: qualPayload, Timestamp: listTimestamp, Value: payload(row, 100)},
		{Row: []byte(row), Family: familyList, Qualifier: qualPrev, Timestamp: listTimestamp, Value: []byte(prev)},
	}}
}

// counterRowOf holds the given values, newest first.
func counterRowOf(row string, values ...int64) client.Row {
	r := client.Row{Key: []byte(row)}
	for i, v := range values {
		r.Cells = append(r.Cells, cell.Cell{Row: []byte(row), Family: familyCounter, Qualifier: qualCount,
			Timestamp: int64(1000 - i), Value: encodeCount(v)})
	}
	return r
}

// chainRowOf holds the given steps and tokens ("step/token"), newest first.
func chainRowOf(row string, steps []int64, toks ...string) client.Row {
	r := client.Row{Key: []byte(row)}
	for i, s := range steps {
		r.Cells = append(r.Cells, cell.Cell{Row: []byte(row), Family: familyChain, Qualifier: qualStep,
			Timestamp: int64(1000 - i), Value: encodeStep(s, toks[i])})
	}
	return r
}

const (
	a, b, c = "00000000000000aa", "00000000000000bb", "00000000000000cc"
	ctr     = "00-ctr-test-00000-0"
	chain   = "00-cas-test-00000-0"
)

var scenarios = []scenario{
	{
		name: "linked lists all present",
		ops:  []Op{listOp(a, "", Acked, 1, 2), listOp(b, a, Acked, 3, 4), listOp(c, b, Acked, 5, 6)},
		rows: []client.Row{listRowOf(a, ""), listRowOf(b, a), listRowOf(c, b)},
	},
	{
		name: "unknown list writes may be present or absent",
		ops:  []Op{listOp(a, "", Acked, 1, 2), listOp(b, a, Unknown, 3, 4), listOp(c, a, Pending, 5, 0)},
		rows: []client.Row{listRowOf(a, ""), listRowOf(c, a)},
	},
	{
		name: "acknowledged list write lost",
		ops:  []Op{listOp(a, "", Acked, 1, 2), listOp(b, a, Acked, 3, 4)},
		rows: []client.Row{listRowOf(b, a)},
		want: []ViolationKind{VLost},
	},
	{
		name: "row nobody wrote",
		ops:  []Op{listOp(a, "", Acked, 1, 2)},
		rows: []client.Row{listRowOf(a, ""), listRowOf(b, a)},
		want: []ViolationKind{VPhantom},
	},
	{
		name: "refused list write present",
		ops:  []Op{listOp(a, "", Acked, 1, 2), listOp(b, a, Failed, 3, 4)},
		rows: []client.Row{listRowOf(a, ""), listRowOf(b, a)},
		want: []ViolationKind{VPhantom},
	},
	{
		name: "list pointer changed",
		ops:  []Op{listOp(a, "", Acked, 1, 2), listOp(b, a, Acked, 3, 4)},
		rows: []client.Row{listRowOf(a, ""), listRowOf(b, "")},
		want: []ViolationKind{VBadValue},
	},
	{
		name: "list pointer to a row never attempted",
		ops:  []Op{listOp(a, c, Acked, 1, 2)},
		rows: []client.Row{listRowOf(a, c)},
		want: []ViolationKind{VBadPointer},
	},
	{
		name: "half-applied list write",
		ops:  []Op{listOp(a, "", Acked, 1, 2)},
		rows: []client.Row{{Key: []byte(a), Cells: listRowOf(a, "").Cells[:1]}},
		want: []ViolationKind{VBadValue},
	},
	{
		name: "damaged payload",
		ops:  []Op{listOp(a, "", Acked, 1, 2)},
		rows: func() []client.Row {
			r := listRowOf(a, "")
			r.Cells[0].Value = payload(b, 100)
			return []client.Row{r}
		}(),
		want: []ViolationKind{VBadValue},
	},
	{
		name: "counter increments in order",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Acked, 2, 5, 12), incr(ctr, Acked, 3, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 3, 2, 1)},
	},
	{
		name: "concurrent increments may return in either order",
		ops:  []Op{incr(ctr, Acked, 2, 1, 10), incr(ctr, Acked, 1, 2, 11)},
		rows: []client.Row{counterRowOf(ctr, 2, 1)},
	},
	{
		name: "unknown increment applied between acknowledged ones",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Unknown, 0, 5, 15), incr(ctr, Acked, 3, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 3, 2, 1)},
	},
	{
		name: "unknown increments not applied",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Unknown, 0, 5, 15), incr(ctr, Pending, 0, 6, 0), incr(ctr, Acked, 2, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 2, 1)},
	},
	{
		name: "refused increment changes nothing",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Failed, 0, 11, 12)},
		rows: []client.Row{counterRowOf(ctr, 1)},
	},
	{
		name: "counter lost an acknowledged increment",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Acked, 2, 20, 30), incr(ctr, Acked, 3, 40, 50)},
		rows: []client.Row{counterRowOf(ctr, 2, 1)},
		want: []ViolationKind{VCounter, VLinearizability},
	},
	{
		name: "counter counts more than was attempted",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Unknown, 0, 20, 30), incr(ctr, Failed, 0, 40, 50)},
		rows: []client.Row{counterRowOf(ctr, 3, 2, 1)},
		want: []ViolationKind{VCounter, VLinearizability},
	},
	{
		name: "two acknowledged increments return the same value (two owners)",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Acked, 1, 2, 11), incr(ctr, Acked, 2, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 2, 1, 1)},
		want: []ViolationKind{VDuplicate, VCounter, VLinearizability},
	},
	{
		name: "stale increment: a later call returns a smaller value",
		ops:  []Op{incr(ctr, Acked, 2, 1, 10), incr(ctr, Acked, 1, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 2, 1)},
		want: []ViolationKind{VLinearizability},
	},
	{
		name: "unknown increment would have to precede its own call",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Acked, 3, 20, 30), incr(ctr, Unknown, 0, 35, 40)},
		rows: []client.Row{counterRowOf(ctr, 3, 2, 1)},
		want: []ViolationKind{VLinearizability},
	},
	{
		name: "counter went backwards",
		ops:  []Op{incr(ctr, Acked, 1, 1, 10), incr(ctr, Unknown, 0, 20, 30)},
		rows: []client.Row{counterRowOf(ctr, 1, 2)},
		want: []ViolationKind{VCounter},
	},
	{
		name: "chain moved by competing writers",
		ops: []Op{
			cas(chain, 0, "t1", Acked, 1, 10), cas(chain, 0, "t2", Failed, 2, 11), readOp(chain, 1, 12, 13),
			cas(chain, 1, "t3", Acked, 14, 20), cas(chain, 1, "t4", Failed, 15, 21), readOp(chain, 2, 22, 23),
			cas(chain, 2, "t5", Unknown, 24, 30), cas(chain, 3, "t6", Unknown, 31, 32),
		},
		rows: []client.Row{chainRowOf(chain, []int64{3, 2, 1}, "t5", "t3", "t1")},
	},
	{
		name: "chain step written twice (two owners)",
		ops:  []Op{cas(chain, 0, "t1", Acked, 1, 10), cas(chain, 0, "t2", Acked, 2, 11)},
		rows: []client.Row{chainRowOf(chain, []int64{1, 1}, "t2", "t1")},
		want: []ViolationKind{VDuplicate, VLinearizability},
	},
	{
		name: "chain skips a step",
		ops:  []Op{cas(chain, 0, "t1", Acked, 1, 10), cas(chain, 2, "t3", Unknown, 20, 30)},
		rows: []client.Row{chainRowOf(chain, []int64{3, 1}, "t3", "t1")},
		want: []ViolationKind{VChain, VLinearizability},
	},
	{
		name: "chain lost an acknowledged step",
		ops:  []Op{cas(chain, 0, "t1", Acked, 1, 10), cas(chain, 1, "t2", Acked, 20, 30)},
		rows: []client.Row{chainRowOf(chain, []int64{1}, "t1")},
		want: []ViolationKind{VLost, VLinearizability},
	},
	{
		name: "chain step written by a refused CAS",
		ops: []Op{cas(chain, 0, "t1", Acked, 1, 10),
			{Kind: KindCAS, Row: chain, From: 1, To: 2, Token: "t2", Outcome: Failed, Call: 20, Return: 30}},
		rows: []client.Row{chainRowOf(chain, []int64{2, 1}, "t2", "t1")},
		want: []ViolationKind{VPhantom, VLinearizability},
	},
	{
		name: "stale read of a chain",
		ops:  []Op{cas(chain, 0, "t1", Acked, 1, 10), readOp(chain, 0, 20, 30)},
		rows: []client.Row{chainRowOf(chain, []int64{1}, "t1")},
		want: []ViolationKind{VLinearizability},
	},
	{
		name: "CAS that should have matched did not",
		ops:  []Op{cas(chain, 0, "t1", Acked, 1, 10), cas(chain, 1, "t2", Failed, 20, 30)},
		rows: []client.Row{chainRowOf(chain, []int64{1}, "t1")},
		want: []ViolationKind{VLinearizability},
	},
}

func TestCheckerFindsExactlyTheViolations(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := &History{Sessions: []Session{{Tag: "test"}}, Ops: slices.Clone(sc.ops)}
			for i := range h.Ops {
				h.Ops[i].ID = int64(i + 1)
			}
			c := NewChecker(h, CheckOptions{VisualizeDir: t.TempDir()})
			for _, r := range sc.rows {
				c.Observe(r)
			}
			rep := c.Finish()
			var got []ViolationKind
			for _, k := range sortedKeys(rep.Counts) {
				got = append(got, k)
			}
			want := slices.Clone(sc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("violations %v, want %v:\n%s", got, want, reportText(rep))
			}
		})
	}
}

func reportText(r *Report) string {
	var b []byte
	w := &byteWriter{&b}
	r.WriteTo(w)
	return string(b)
}

type byteWriter struct{ b *[]byte }

func (w *byteWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }
