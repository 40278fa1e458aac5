package tabletserver

import (
	"encoding/binary"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

func addTo(family, qualifier string, ts, n int64) *tabulapb.Mutation {
	return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_AddToCell_{AddToCell: &tabulapb.Mutation_AddToCell{
		Family: family, Qualifier: []byte(qualifier), TimestampMicros: ts, Input: n}}}
}

func mergeTo(family, qualifier string, ts, n int64) *tabulapb.Mutation {
	return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_MergeToCell_{MergeToCell: &tabulapb.Mutation_MergeToCell{
		Family: family, Qualifier: []byte(qualifier), TimestampMicros: ts, Input: binary.BigEndian.AppendUint64(nil, uint64(n))}}}
}

// aggCells renders a row's cells as "family:qualifier@ts=N".
func aggCells(rows []*tabulapb.Row) string {
	s := ""
	for _, r := range rows {
		for _, c := range r.Cells {
			if s != "" {
				s += " "
			}
			s += fmt.Sprintf("%s:%s@%d=%d", c.Family, c.Qualifier, c.TimestampMicros, int64(binary.BigEndian.Uint64(c.Value)))
		}
	}
	return s
}

// TestAggregateFamiliesOverGRPC writes AddToCell and MergeToCell through
// MutateRow and MutateRows into sum and max families of a schema from
// etcd, reads one merged cell per (column, timestamp) before and after a
// flush and a compaction, and gets INVALID_ARGUMENT for what does not fit
// a family's value type.
func TestAggregateFamiliesOverGRPC(t *testing.T) {
	e := newEnv(t)
	e.schema.Families = append(e.schema.Families,
		&tabulapb.Family{Name: "hits", ValueType: tabulapb.ValueType_VALUE_TYPE_SUM},
		&tabulapb.Family{Name: "peak", ValueType: tabulapb.ValueType_VALUE_TYPE_MAX})
	e.putSchema(e.schema)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))

	for i := int64(1); i <= 3; i++ {
		if err := put(e.ctx, c, ref, "page", addTo("hits", "n", 100, i), mergeTo("peak", "ms", 100, 10*i%25)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: []*tabulapb.MutateRowsRequest_Entry{
		{Tablet: ref, RowKey: []byte("page"), Mutations: []*tabulapb.Mutation{addTo("hits", "n", 100, 10), addTo("hits", "n", 200, 1)}},
		{Tablet: ref, RowKey: []byte("page"), Mutations: []*tabulapb.Mutation{set("hits", "n", 100, "12345678")}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range resp.Entries {
		if want := codes.OK; en.Index == 1 {
			want = codes.InvalidArgument
			if codes.Code(en.Code) != want {
				t.Fatalf("MutateRows entry 1 (SetCell into a sum family): code %v, want %v", codes.Code(en.Code), want)
			}
		} else if codes.Code(en.Code) != want {
			t.Fatalf("MutateRows entry %d: code %v %s", en.Index, codes.Code(en.Code), en.Message)
		}
	}
	want := "hits:n@200=1 hits:n@100=16 peak:ms@100=20"
	read := func(when string) {
		t.Helper()
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("page")}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := aggCells(rows); got != want {
			t.Fatalf("%s: read %s, want %s", when, got, want)
		}
	}
	read("from the memtable")
	if _, err := c.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "page", addTo("hits", "n", 100, 4)); err != nil {
		t.Fatal(err)
	}
	want = "hits:n@200=1 hits:n@100=20 peak:ms@100=20"
	read("after a flush")
	if _, err := c.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true}); err != nil {
		t.Fatal(err)
	}
	read("after a compaction")

	testkit.WantCode(t, "SetCell into a sum family", put(e.ctx, c, ref, "page", set("hits", "n", 1, "12345678")), codes.InvalidArgument, "")
	testkit.WantCode(t, "AddToCell into a bytes family", put(e.ctx, c, ref, "page", addTo("cf", "n", 1, 1)), codes.InvalidArgument, "")
	bad := mergeTo("peak", "ms", 1, 1)
	bad.GetMergeToCell().Input = []byte{1, 2}
	testkit.WantCode(t, "MergeToCell of 2 bytes", put(e.ctx, c, ref, "page", bad), codes.InvalidArgument, "")
	testkit.WantCode(t, "AddToCell at the server's clock", put(e.ctx, c, ref, "page", addTo("hits", "n", -1, 1)), codes.InvalidArgument, "")
	_, err = c.ReadModifyWriteRow(e.ctx, &tabulapb.ReadModifyWriteRowRequest{Tablet: ref, RowKey: []byte("page"),
		Rules: []*tabulapb.ReadModifyWriteRule{{Family: "hits", Qualifier: []byte("n"), Rule: &tabulapb.ReadModifyWriteRule_IncrementAmount{IncrementAmount: 1}}}})
	testkit.WantCode(t, "ReadModifyWrite on a sum family", err, codes.InvalidArgument, "")
	read("after the refused writes")
}
