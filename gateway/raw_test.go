package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc/codes"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/internal/testkit"
)

// rawClient is a bare google.bigtable.v2 client on the gateway, for what
// the official client hides (chunk layout, the final sample).
func rawClient(t *testing.T) btpb.BigtableClient {
	t.Helper()
	conn, err := grpc.NewClient(cluster.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return btpb.NewBigtableClient(conn)
}

func tablePath(table string) string {
	return "projects/" + project + "/instances/" + instance + "/tables/" + table
}

// TestBadInputGetsBigtablesCodes: malformed names, unknown tables and
// families, invalid filters and regexes, oversized rows.
func TestBadInputGetsBigtablesCodes(t *testing.T) {
	_, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "bad", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	raw := rawClient(t)
	ctx := testContext(t)
	setCell := func(fam string, ts int64, v []byte) []*btpb.Mutation {
		return []*btpb.Mutation{{Mutation: &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{FamilyName: fam, ColumnQualifier: []byte("q"), TimestampMicros: ts, Value: v}}}}
	}
	mutate := func(table string, row []byte, ms []*btpb.Mutation) error {
		_, err := raw.MutateRow(ctx, &btpb.MutateRowRequest{TableName: table, RowKey: row, Mutations: ms})
		return err
	}
	read := func(table string, f *btpb.RowFilter) error {
		st, err := raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: table, Filter: f})
		if err != nil {
			return err
		}
		for {
			if _, err := st.Recv(); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	checkAndMutate := func(table string, row []byte) error {
		_, err := raw.CheckAndMutateRow(ctx, &btpb.CheckAndMutateRowRequest{TableName: table, RowKey: row})
		return err
	}
	readKeys := func(table string, keys ...[]byte) error {
		st, err := raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: table, Rows: &btpb.RowSet{RowKeys: keys}})
		if err != nil {
			return err
		}
		_, err = st.Recv()
		return err
	}
	good := tablePath("bad")
	for _, tc := range []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"malformed table name", mutate("tables/bad", []byte("r"), setCell("cf", 1000, nil)), codes.InvalidArgument, "projects/<project>/instances/<instance>/tables/<table>"},
		{"bad table id", mutate(tablePath("no/such"), []byte("r"), setCell("cf", 1000, nil)), codes.InvalidArgument, "not a valid table name"},
		{"unknown table", mutate(tablePath("nosuch"), []byte("r"), setCell("cf", 1000, nil)), codes.NotFound, "nosuch"},
		{"unknown table read", read(tablePath("nosuch"), nil), codes.NotFound, "nosuch"},
		{"unknown family", mutate(good, []byte("r"), setCell("nofam", 1000, nil)), codes.NotFound, "nofam"},
		{"empty row key", mutate(good, nil, setCell("cf", 1000, nil)), codes.InvalidArgument, "row_key"},
		{"row key over 4 KiB", mutate(good, bytes.Repeat([]byte("k"), 4097), setCell("cf", 1000, nil)), codes.InvalidArgument, "4096"},
		{"no mutations", mutate(good, []byte("r"), nil), codes.InvalidArgument, "no mutations"},
		{"timestamp not in milliseconds", mutate(good, []byte("r"), setCell("cf", 1001, nil)), codes.InvalidArgument, "granularity"},
		{"negative timestamp", mutate(good, []byte("r"), setCell("cf", -5, nil)), codes.InvalidArgument, "negative"},
		{"value over 64 MiB", mutate(good, []byte("r"), setCell("cf", 1000, make([]byte, 64<<20+1))), codes.InvalidArgument, "value"},
		{"bad regex", read(good, &btpb.RowFilter{Filter: &btpb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("a(b")}}), codes.InvalidArgument, "value_regex"},
		{"empty row key regex", read(good, &btpb.RowFilter{Filter: &btpb.RowFilter_RowKeyRegexFilter{}}), codes.InvalidArgument, "row_key_regex_filter"},
		{"pass_all false", read(good, &btpb.RowFilter{Filter: &btpb.RowFilter_PassAllFilter{}}), codes.InvalidArgument, "pass_all_filter must be true"},
		{"zero cells per column", read(good, &btpb.RowFilter{Filter: &btpb.RowFilter_CellsPerColumnLimitFilter{}}), codes.InvalidArgument, "cells_per_column_limit_filter"},
		{"column range without family", read(good, &btpb.RowFilter{Filter: &btpb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &btpb.ColumnRange{}}}), codes.InvalidArgument, "family_name"},
		{"empty filter", read(good, &btpb.RowFilter{}), codes.InvalidArgument, "set one filter"},
		{"check and mutate without mutations", checkAndMutate(good, []byte("r")), codes.InvalidArgument, "No mutations provided"},
		{"empty row key read", readKeys(good, []byte("r"), nil), codes.InvalidArgument, "Row keys must be non-empty"},
	} {
		testkit.WantCode(t, tc.name, tc.err, tc.code, tc.msg)
	}
	if rows := readAll(t, bigClient(t).Open("bad"), bigtable.InfiniteRange("")); len(rows) != 0 {
		t.Errorf("bad input stored rows: %q", rows)
	}
}

// TestRawProtocol checks what the official client hides: the final empty
// sample key and how a large value is chunked.
func TestRawProtocol(t *testing.T) {
	c, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "raw", SplitKeys: []string{"m"}, Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	ctx := testContext(t)
	apply(t, c.Open("raw"), "a", set("cf", "q", 1000, "x"))
	m := bigtable.NewMutation()
	m.Set("cf", "big", 1000, bytes.Repeat([]byte("v"), 3<<20+5))
	apply(t, bigClient(t).Open("raw"), "z", m)

	raw := rawClient(t)
	var keys []string
	for _, r := range sampleAll(t, raw, &btpb.SampleRowKeysRequest{TableName: tablePath("raw")}) {
		keys = append(keys, string(r.RowKey))
	}
	if len(keys) == 0 || keys[len(keys)-1] != "" || !slices.IsSorted(keys[:len(keys)-1]) {
		t.Errorf("SampleRowKeys sent %q; want sorted keys then the empty key", keys)
	}

	st, err := raw.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: tablePath("raw"), Rows: &btpb.RowSet{RowKeys: [][]byte{[]byte("z")}}})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var total int
	for {
		r, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Chunks {
			sizes = append(sizes, int(ch.ValueSize))
			total += len(ch.Value)
		}
	}
	// 1 MiB chunks: three carry the whole size, the last one 0.
	if want := []int{3<<20 + 5, 3<<20 + 5, 3<<20 + 5, 0}; !slices.Equal(sizes, want) || total != 3<<20+5 {
		t.Errorf("value sizes per chunk %v (total %d), want %v", sizes, total, want)
	}
}

// readRaw reads the whole table with filter f through the raw protocol and
// renders each row's cells as "key: fam:qual@ts=value[labels]".
func readRaw(t *testing.T, raw btpb.BigtableClient, table string, f *btpb.RowFilter) []string {
	t.Helper()
	st, err := raw.ReadRows(testContext(t), &btpb.ReadRowsRequest{TableName: tablePath(table), Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	var cur, fam, qual string
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range r.Chunks {
			if len(ch.RowKey) > 0 {
				cur = string(ch.RowKey) + ":"
			}
			if ch.FamilyName != nil {
				fam = ch.FamilyName.Value
			}
			if ch.Qualifier != nil {
				qual = string(ch.Qualifier.Value)
			}
			cur += fmt.Sprintf(" %s:%s@%d=%s%v", fam, qual, ch.TimestampMicros, ch.Value, ch.Labels)
			if ch.GetCommitRow() {
				rows = append(rows, cur)
			}
		}
	}
}

// TestSinkAndRowSample: the filters the Go client has no constructor for
// (sink) or that are random (row_sample_filter), through the raw protocol.
func TestSinkAndRowSample(t *testing.T) {
	c, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "sink", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("sink")
	m := bigtable.NewMutation()
	m.Set("cf", "a", 2000, []byte("x"))
	m.Set("cf", "b", 1000, []byte("y"))
	apply(t, tbl, "row", m)
	raw := rawClient(t)
	chain := func(fs ...*btpb.RowFilter) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_Chain_{Chain: &btpb.RowFilter_Chain{Filters: fs}}}
	}
	interleave := func(fs ...*btpb.RowFilter) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_Interleave_{Interleave: &btpb.RowFilter_Interleave{Filters: fs}}}
	}
	label := func(l string) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: l}}
	}
	sink := &btpb.RowFilter{Filter: &btpb.RowFilter_Sink{Sink: true}}
	column := func(q string) *btpb.RowFilter {
		return &btpb.RowFilter{Filter: &btpb.RowFilter_ColumnQualifierRegexFilter{ColumnQualifierRegexFilter: []byte(q)}}
	}
	block := &btpb.RowFilter{Filter: &btpb.RowFilter_BlockAllFilter{BlockAllFilter: true}}
	// Bigtable's documented example: the sink's cells reach the output
	// though the chain after the interleave blocks everything.
	got := readRaw(t, raw, "sink", chain(interleave(chain(column("a"), label("seen"), sink), column("b")), block))
	if len(got) != 1 || got[0] != "row: cf:a@2000=x[seen]" {
		t.Errorf("sink: %q, want only the sunk, labelled cf:a", got)
	}

	for i := 0; i < 200; i++ {
		apply(t, tbl, fmt.Sprintf("s%03d", i), set("cf", "q", 1000, "v"))
	}
	sample := &btpb.RowFilter{Filter: &btpb.RowFilter_RowSampleFilter{RowSampleFilter: 0.5}}
	n := len(readRaw(t, raw, "sink", sample))
	// 201 rows each kept with probability 1/2: outside [40, 160] with
	// probability below 1e-17.
	if n < 40 || n > 160 {
		t.Errorf("row_sample_filter 0.5 kept %d of 201 rows", n)
	}
	_, err := readFirst(raw, "sink", 1.5)
	testkit.WantCode(t, "row_sample_filter 1.5", err, codes.InvalidArgument, "row_sample")
}

// readFirst reads the first answer of a scan with a row sample filter of p.
func readFirst(raw btpb.BigtableClient, table string, p float64) (*btpb.ReadRowsResponse, error) {
	st, err := raw.ReadRows(context.Background(), &btpb.ReadRowsRequest{TableName: tablePath(table),
		Filter: &btpb.RowFilter{Filter: &btpb.RowFilter_RowSampleFilter{RowSampleFilter: p}}})
	if err != nil {
		return nil, err
	}
	return st.Recv()
}
