package tabletserver

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/rowfilter"
)

// TestLabelsComeBackOverRPC: labels a filter puts on cells reach the
// client, on whole rows, on rows sent in parts (the label on the first
// piece of a split value) and on single-key reads; a CheckAndMutateRow
// predicate with labels and sinks matches on what reaches the output.
func TestLabelsComeBackOverRPC(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	big := bytes.Repeat([]byte("v"), 3*readBatchBytes)
	if err := put(e.ctx, c, ref, "alice", set("cf", "name", 10, "Alice"), set("meta", "age", 10, "30")); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "big", set("cf", "blob", 10, string(big)), set("meta", "age", 10, "1")); err != nil {
		t.Fatal(err)
	}
	filter := convert.FilterToProto(rowfilter.Interleave(
		rowfilter.Chain(rowfilter.Family("cf"), rowfilter.Label("cf")),
		rowfilter.Chain(rowfilter.Family("meta"), rowfilter.Label("meta"), rowfilter.Sink()),
	))
	join := func(rows []*tabulapb.Row) map[string][]*tabulapb.Cell {
		t.Helper()
		var j convert.RowJoiner
		out := map[string][]*tabulapb.Cell{}
		for _, p := range rows {
			r, err := j.Add(p)
			if err != nil {
				t.Fatal(err)
			}
			if r != nil {
				out[string(r.Key)] = r.Cells
			}
		}
		return out
	}
	check := func(what string, rows map[string][]*tabulapb.Cell, keys ...string) {
		t.Helper()
		for _, k := range keys {
			cells := rows[k]
			if len(cells) != 2 {
				t.Fatalf("%s: row %s has %d cells, want 2", what, k, len(cells))
			}
			for _, c := range cells {
				if !slices.Equal(c.GetLabels(), []string{c.GetFamily()}) {
					t.Errorf("%s: row %s cell %s:%s has labels %q, want [%s]", what, k, c.GetFamily(), c.GetQualifier(), c.GetLabels(), c.GetFamily())
				}
			}
			if k == "big" && !bytes.Equal(cells[0].GetValue(), big) {
				t.Errorf("%s: big value came back with %d bytes", what, len(cells[0].GetValue()))
			}
		}
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	check("scan", join(rows), "alice", "big")
	for _, k := range []string{"alice", "big"} {
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Filter: filter, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte(k)}}})
		if err != nil {
			t.Fatal(err)
		}
		check("single key", join(rows), k)
	}

	for _, tc := range []struct {
		pred *rowfilter.Filter
		want bool
	}{
		{rowfilter.Chain(rowfilter.Family("meta"), rowfilter.Label("x")), true},
		{rowfilter.Chain(rowfilter.Family("meta"), rowfilter.Sink(), rowfilter.Block()), true},
		{rowfilter.Chain(rowfilter.Family("nope"), rowfilter.Sink()), false},
	} {
		resp, err := c.CheckAndMutateRow(e.ctx, &tabulapb.CheckAndMutateRowRequest{Tablet: ref, RowKey: []byte("alice"),
			PredicateFilter: convert.FilterToProto(tc.pred)})
		if err != nil {
			t.Fatalf("CheckAndMutateRow(%s): %v", tc.pred, err)
		}
		if resp.GetPredicateMatched() != tc.want {
			t.Errorf("CheckAndMutateRow(%s) matched %v, want %v", tc.pred, resp.GetPredicateMatched(), tc.want)
		}
	}
}
