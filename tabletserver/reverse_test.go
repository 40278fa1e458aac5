package tabletserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
)

// A reversed ReadRows streams the rows in descending order, in batches,
// with a row larger than a message sent in parts (in order) and joined
// back whole; rows_limit counts from the highest row of the set.
func TestReadRowsReversed(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	const n = 600
	var entries []*tabulapb.MutateRowsRequest_Entry
	for i := range n {
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: fmt.Appendf(nil, "row%04d", i),
			Mutations: []*tabulapb.Mutation{set("cf", "q", 1, fmt.Sprint(i))}})
	}
	if _, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 3<<20)
	for _, q := range []string{"p", "q"} {
		if err := put(e.ctx, c, ref, "row0300x", set("cf", q, 1, string(big))); err != nil {
			t.Fatal(err)
		}
	}
	read := func(req *tabulapb.ReadRowsRequest) (keys []string, msgs int) {
		t.Helper()
		stream, err := c.ReadRows(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var j convert.RowJoiner
		for {
			m, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return keys, msgs
			}
			if err != nil {
				t.Fatal(err)
			}
			msgs++
			for _, p := range m.Rows {
				r, err := j.Add(p)
				if err != nil {
					t.Fatal(err)
				}
				if r == nil {
					continue
				}
				if string(r.Key) == "row0300x" && (len(r.Cells) != 2 || !bytes.Equal(r.Cells[0].Value, big) || string(r.Cells[1].Qualifier) != "q") {
					t.Fatalf("the big row came back with %d cells", len(r.Cells))
				}
				keys = append(keys, string(r.Key))
			}
		}
	}
	keys, msgs := read(&tabulapb.ReadRowsRequest{Tablet: ref, Reversed: true})
	if len(keys) != n+1 || keys[0] != "row0599" || keys[n] != "row0000" || msgs < n/readBatchRows {
		t.Fatalf("reversed scan: %d rows (first %q) in %d messages", len(keys), keys[0], msgs)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i] >= keys[i-1] {
			t.Fatalf("row %q after %q in a reversed scan", keys[i], keys[i-1])
		}
	}
	keys, _ = read(&tabulapb.ReadRowsRequest{Tablet: ref, Reversed: true, RowsLimit: 3, Rows: &tabulapb.RowSet{
		RowKeys:   [][]byte{[]byte("row0010")},
		RowRanges: []*tabulapb.RowRange{{StartKey: []byte("row0299"), EndKey: []byte("row0301")}, {StartKey: []byte("row0001"), EndKey: []byte("row0003")}},
	}})
	if got := fmt.Sprint(keys); got != "[row0300x row0300 row0299]" {
		t.Fatalf("reversed read of a row set with rows_limit 3: %s", got)
	}
	keys, _ = read(&tabulapb.ReadRowsRequest{Tablet: ref, Reversed: true, Rows: &tabulapb.RowSet{
		RowKeys:   [][]byte{[]byte("row0010")},
		RowRanges: []*tabulapb.RowRange{{StartKey: []byte("row0001"), EndKey: []byte("row0003")}},
	}})
	if got := fmt.Sprint(keys); got != "[row0010 row0002 row0001]" {
		t.Fatalf("reversed read of keys and a range: %s", got)
	}
}
