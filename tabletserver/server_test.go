package tabletserver

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

func TestDataCallsOverGRPC(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))

	if err := put(e.ctx, c, ref, "alice", set("cf", "name", 10, "Alice"), set("meta", "age", 10, "30")); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "bob", set("cf", "name", 10, "Bob")); err != nil {
		t.Fatal(err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowKeys(rows); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("rows %q, want alice, bob", got)
	}
	if n := len(rows[0].Cells); n != 2 || rows[0].Cells[0].Family != "cf" || string(rows[0].Cells[1].Value) != "30" {
		t.Fatalf("alice's cells in read order: %v", rows[0].Cells)
	}

	t.Run("row keys, ranges and limit", func(t *testing.T) {
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("bob"), []byte("carol")}}})
		if err != nil || !slices.Equal(rowKeys(rows), []string{"bob"}) {
			t.Fatalf("keys read %q, %v; want bob", rowKeys(rows), err)
		}
		rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowRanges: []*tabulapb.RowRange{{StartKey: []byte("b")}}}})
		if err != nil || !slices.Equal(rowKeys(rows), []string{"bob"}) {
			t.Fatalf("range [b, ∞) read %q, %v; want bob", rowKeys(rows), err)
		}
		rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, RowsLimit: 1})
		if err != nil || !slices.Equal(rowKeys(rows), []string{"alice"}) {
			t.Fatalf("limit 1 read %q, %v; want alice", rowKeys(rows), err)
		}
		filter := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_FamilyNameFilter{FamilyNameFilter: "meta"}}
		rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Filter: filter})
		if err != nil || !slices.Equal(rowKeys(rows), []string{"alice"}) || len(rows[0].Cells) != 1 {
			t.Fatalf("family filter read %v, %v; want alice's meta cell only", rows, err)
		}
	})

	t.Run("check and mutate", func(t *testing.T) {
		pred := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("Bob")}}
		for _, row := range []string{"alice", "bob"} {
			resp, err := c.CheckAndMutateRow(e.ctx, &tabulapb.CheckAndMutateRowRequest{
				Tablet: ref, RowKey: []byte(row), PredicateFilter: pred,
				TrueMutations:  []*tabulapb.Mutation{set("cf", "branch", 1, "true")},
				FalseMutations: []*tabulapb.Mutation{set("cf", "branch", 1, "false")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := row == "bob"; resp.PredicateMatched != want {
				t.Fatalf("%s: matched %v, want %v", row, resp.PredicateMatched, want)
			}
			rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte(row)}},
				Filter: &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ColumnQualifierRegexFilter{ColumnQualifierRegexFilter: []byte("branch")}}})
			if err != nil || len(rows) != 1 || string(rows[0].Cells[0].Value) != fmt.Sprint(row == "bob") {
				t.Fatalf("%s: branch cell %v, %v", row, rows, err)
			}
		}
	})

	t.Run("read modify write", func(t *testing.T) {
		rule := func(inc int64) *tabulapb.ReadModifyWriteRule {
			return &tabulapb.ReadModifyWriteRule{Family: "cf", Qualifier: []byte("n"), Rule: &tabulapb.ReadModifyWriteRule_IncrementAmount{IncrementAmount: inc}}
		}
		var last int64
		for _, inc := range []int64{5, -2, 10} {
			resp, err := c.ReadModifyWriteRow(e.ctx, &tabulapb.ReadModifyWriteRowRequest{Tablet: ref, RowKey: []byte("counter"),
				Rules: []*tabulapb.ReadModifyWriteRule{rule(inc)}})
			if err != nil {
				t.Fatal(err)
			}
			last += inc
			if v := resp.Row.Cells[0].Value; len(v) != 8 || int64(binary.BigEndian.Uint64(v)) != last {
				t.Fatalf("after +%d: value %x, want %d", inc, v, last)
			}
		}
		resp, err := c.ReadModifyWriteRow(e.ctx, &tabulapb.ReadModifyWriteRowRequest{Tablet: ref, RowKey: []byte("alice"),
			Rules: []*tabulapb.ReadModifyWriteRule{{Family: "cf", Qualifier: []byte("name"), Rule: &tabulapb.ReadModifyWriteRule_AppendValue{AppendValue: []byte(" Smith")}}}})
		if err != nil || string(resp.Row.Cells[0].Value) != "Alice Smith" {
			t.Fatalf("append: %v, %v", resp, err)
		}
	})

	t.Run("mutate rows gives a status per entry", func(t *testing.T) {
		stale := &tabulapb.TabletRef{Table: ref.Table, TabletId: ref.TabletId, Epoch: ref.Epoch + 1}
		resp, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: []*tabulapb.MutateRowsRequest_Entry{
			{Tablet: ref, RowKey: []byte("dave"), Mutations: []*tabulapb.Mutation{set("cf", "name", 1, "Dave")}},
			{Tablet: stale, RowKey: []byte("erin"), Mutations: []*tabulapb.Mutation{set("cf", "name", 1, "Erin")}},
			{Tablet: ref, RowKey: []byte("frank"), Mutations: []*tabulapb.Mutation{set("nope", "name", 1, "Frank")}},
			{Tablet: ref, RowKey: nil, Mutations: []*tabulapb.Mutation{set("cf", "name", 1, "nobody")}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		want := []codes.Code{codes.OK, codes.FailedPrecondition, codes.NotFound, codes.InvalidArgument}
		for i, en := range resp.Entries {
			if en.Index != int64(i) || codes.Code(en.Code) != want[i] {
				t.Fatalf("entry %d: index %d code %v (%s), want %v", i, en.Index, codes.Code(en.Code), en.Message, want[i])
			}
		}
		if ns := resp.Entries[1].NotServing; ns == nil || ns.TabletId != ref.TabletId {
			t.Fatalf("stale entry has NotServing %v", ns)
		}
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("dave"), []byte("erin"), []byte("frank")}}})
		if err != nil || !slices.Equal(rowKeys(rows), []string{"dave"}) {
			t.Fatalf("after MutateRows read %q, %v; want only dave", rowKeys(rows), err)
		}
	})

	t.Run("sample row keys and stats", func(t *testing.T) {
		resp, err := c.SampleRowKeys(e.ctx, &tabulapb.SampleRowKeysRequest{Tablet: ref})
		if err != nil {
			t.Fatal(err)
		}
		last := resp.Samples[len(resp.Samples)-1]
		if len(last.RowKey) != 0 || last.OffsetBytes <= 0 {
			t.Fatalf("last sample %v: want the (empty) tablet end at the tablet's size", last)
		}
		st, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
		if err != nil || st.ServerId != srv.ID() || len(st.Tablets) != 1 || st.Tablets[0].Tablet.TabletId != "t1" || st.Tablets[0].SizeBytes <= 0 {
			t.Fatalf("stats %v, %v", st, err)
		}
	})
}

func TestReadRowsStreamsInBatches(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	const n = 2*readBatchRows + 100 // three messages at least
	var entries []*tabulapb.MutateRowsRequest_Entry
	for i := range n {
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: fmt.Appendf(nil, "row%04d", i),
			Mutations: []*tabulapb.Mutation{set("cf", "q", 1, "v")}})
	}
	resp, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range resp.Entries {
		if en.Code != 0 {
			t.Fatalf("entry %d: %s", en.Index, en.Message)
		}
	}
	stream, err := c.ReadRows(e.ctx, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	var msgs, rows int
	var prev []byte
	for {
		m, err := stream.Recv()
		if err != nil {
			break
		}
		msgs++
		if len(m.Rows) > readBatchRows {
			t.Fatalf("message of %d rows, want at most %d", len(m.Rows), readBatchRows)
		}
		for _, r := range m.Rows {
			if bytes.Compare(r.Key, prev) <= 0 {
				t.Fatalf("row %q after %q: not in key order", r.Key, prev)
			}
			prev = r.Key
			rows++
		}
	}
	if rows != n || msgs < n/readBatchRows {
		t.Fatalf("read %d rows in %d messages, want %d rows in at least %d", rows, msgs, n, n/readBatchRows)
	}
}

func TestWrongEpochOrTabletIsNotServing(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", []byte("b"), []byte("m"), srv, 3))
	cases := []struct {
		name string
		ref  *tabulapb.TabletRef
		row  string
	}{
		{"older epoch", &tabulapb.TabletRef{Table: "users", TabletId: "t1", Epoch: 2}, "c"},
		{"newer epoch", &tabulapb.TabletRef{Table: "users", TabletId: "t1", Epoch: 4}, "c"},
		{"unknown tablet", &tabulapb.TabletRef{Table: "users", TabletId: "t9", Epoch: 3}, "c"},
		{"other table", &tabulapb.TabletRef{Table: "orders", TabletId: "t1", Epoch: 3}, "c"},
		{"row before the range", ref, "a"},
		{"row at the range end", ref, "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := put(e.ctx, c, tc.ref, tc.row, set("cf", "q", 1, "v"))
			wantNotServing(t, "MutateRow", err, tc.ref.Table, tc.ref.TabletId)
			_, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: tc.ref})
			if tc.ref != ref {
				wantNotServing(t, "ReadRows", err, tc.ref.Table, tc.ref.TabletId)
			}
		})
	}
	if err := put(e.ctx, c, ref, "c", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("the right epoch and row: %v", err)
	}
}

func TestBadInputIsRejectedAndNothingIsLost(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "keep", set("cf", "q", 7, "kept")); err != nil {
		t.Fatal(err)
	}
	badRegex := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("([")}}
	cases := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"unknown family", func() error { return put(e.ctx, c, ref, "keep", set("nope", "q", 1, "x")) }, codes.NotFound},
		{"unknown family among good ones", func() error {
			return put(e.ctx, c, ref, "keep", set("cf", "q", 8, "lost?"), set("nope", "q", 1, "x"))
		}, codes.NotFound},
		{"empty row key", func() error { return put(e.ctx, c, ref, "", set("cf", "q", 1, "x")) }, codes.InvalidArgument},
		{"oversized row key", func() error { return put(e.ctx, c, ref, strings.Repeat("k", 4097), set("cf", "q", 1, "x")) }, codes.InvalidArgument},
		{"no mutation", func() error { return put(e.ctx, c, ref, "keep") }, codes.InvalidArgument},
		{"empty mutation", func() error { return put(e.ctx, c, ref, "keep", &tabulapb.Mutation{}) }, codes.InvalidArgument},
		{"bad timestamp", func() error { return put(e.ctx, c, ref, "keep", set("cf", "q", -5, "x")) }, codes.InvalidArgument},
		{"missing tablet ref", func() error { return put(e.ctx, c, nil, "keep", set("cf", "q", 1, "x")) }, codes.InvalidArgument},
		{"bad regex filter", func() error {
			_, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Filter: badRegex})
			return err
		}, codes.InvalidArgument},
		{"bad predicate", func() error {
			_, err := c.CheckAndMutateRow(e.ctx, &tabulapb.CheckAndMutateRowRequest{Tablet: ref, RowKey: []byte("keep"), PredicateFilter: badRegex,
				TrueMutations: []*tabulapb.Mutation{set("cf", "q", 9, "lost?")}})
			return err
		}, codes.InvalidArgument},
		{"negative rows limit", func() error {
			_, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, RowsLimit: -1})
			return err
		}, codes.InvalidArgument},
		{"increment of a non-counter", func() error {
			_, err := c.ReadModifyWriteRow(e.ctx, &tabulapb.ReadModifyWriteRowRequest{Tablet: ref, RowKey: []byte("keep"),
				Rules: []*tabulapb.ReadModifyWriteRule{{Family: "cf", Qualifier: []byte("q"), Rule: &tabulapb.ReadModifyWriteRule_IncrementAmount{IncrementAmount: 1}}}})
			return err
		}, codes.InvalidArgument},
		{"load without schema", func() error {
			_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: &tabulapb.TabletInfo{Table: "users", TabletId: "t2", Epoch: 1}})
			return err
		}, codes.InvalidArgument},
		{"load of a path-escaping tablet id", func() error {
			_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: &tabulapb.TabletInfo{Table: "users", TabletId: "..", Epoch: 1}, Schema: e.schema})
			return err
		}, codes.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { testkit.WantCode(t, tc.name, tc.call(), tc.code, "") })
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != "kept" || rows[0].Cells[0].TimestampMicros != 7 {
		t.Fatalf("after bad requests the table holds %v; want only keep cf:q@7=kept", rows)
	}
}

func TestLoadTabletChecksTheAssignmentInEtcd(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	other := e.start(nil)
	c := e.dial(srv)
	info := func(id string, epoch int64) *tabulapb.TabletInfo {
		return &tabulapb.TabletInfo{Table: "users", TabletId: id, Epoch: epoch}
	}
	e.assign("mine", nil, []byte("m"), srv, 2)
	e.assign("theirs", []byte("m"), nil, other, 2)
	for _, tc := range []struct {
		name string
		info *tabulapb.TabletInfo
	}{
		{"wrong epoch", info("mine", 1)},
		{"another server's tablet", info("theirs", 2)},
		{"no such tablet", info("ghost", 1)},
	} {
		_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: tc.info, Schema: e.schema})
		testkit.WantCode(t, tc.name, err, codes.FailedPrecondition, "")
	}
	ref := e.load(c, e.assign("mine", nil, []byte("m"), srv, 2))
	e.load(c, e.assign("mine", nil, []byte("m"), srv, 2)) // loading again is a no-op
	if err := put(e.ctx, c, ref, "alice", set("cf", "q", 1, "v1")); err != nil {
		t.Fatal(err)
	}
	// A new assignment (epoch 3) reopens the tablet from its folder: the
	// old epoch stops working, the data is still there.
	ref3 := e.load(c, e.assign("mine", nil, []byte("m"), srv, 3))
	wantNotServing(t, "write at the old epoch", put(e.ctx, c, ref, "alice", set("cf", "q", 2, "v2")), "users", "mine")
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref3})
	if err != nil || len(rows) != 1 || string(rows[0].Cells[0].Value) != "v1" {
		t.Fatalf("after reload read %v, %v; want alice=v1", rows, err)
	}
}

func TestUpdateSchemaAddsAFamily(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	testkit.WantCode(t, "write to a family not yet added", put(e.ctx, c, ref, "r", set("extra", "q", 1, "v")), codes.NotFound, "")
	sch := &tabulapb.TableSchema{Name: "users", Families: append(slices.Clone(e.schema.Families), &tabulapb.Family{Name: "extra"})}
	e.putSchema(sch) // the master writes etcd first, then tells the servers
	if _, err := c.UpdateSchema(e.ctx, &tabulapb.UpdateSchemaRequest{Schema: sch}); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "r", set("extra", "q", 1, "v")); err != nil {
		t.Fatalf("write to the added family: %v", err)
	}
	_, err := c.UpdateSchema(e.ctx, &tabulapb.UpdateSchemaRequest{Schema: &tabulapb.TableSchema{Name: "bad name!"}})
	testkit.WantCode(t, "bad table name", err, codes.InvalidArgument, "")
}

// Anyone who can reach a tablet server could once send it a schema: a
// forged TTL of a microsecond and a major compaction erased a table while
// etcd (and `table describe`) showed no TTL. The server takes families
// from etcd only.
func TestForgedSchemaIsIgnored(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	for _, r := range []string{"a", "b", "c"} {
		if err := put(e.ctx, c, ref, r, set("cf", "q", 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	forged := &tabulapb.TableSchema{Name: "users", Families: []*tabulapb.Family{{Name: "cf", TtlMicros: 1}, {Name: "meta", TtlMicros: 1}}}
	if _, err := c.UpdateSchema(e.ctx, &tabulapb.UpdateSchemaRequest{Schema: forged}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true}); err != nil {
		t.Fatal(err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || len(rows) != 3 {
		t.Fatalf("after a forged schema and a major compaction the tablet reads %v, %v; want a, b, c", rowKeys(rows), err)
	}
	// A forged schema in a load is ignored too.
	rec := e.assign("t2", []byte("x"), nil, srv, 1)
	if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: forged}); err != nil {
		t.Fatal(err)
	}
	srv.mu.RLock()
	got := srv.schemas["users"]
	srv.mu.RUnlock()
	if got.GetFamilies()[0].GetTtlMicros() != 0 {
		t.Fatalf("the server took a TTL from a load request: %v", got)
	}
}

// TestMutateRowsKeepsRequestOrderPerRow: MutateRows applies different rows
// concurrently, but the entries of one row in request order, so the last
// write of a row (same timestamp: the latest sequence number wins) and a
// delete followed by a write land as sent.
func TestMutateRowsKeepsRequestOrderPerRow(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	const rows, versions = 40, 12
	var entries []*tabulapb.MutateRowsRequest_Entry
	for v := range versions {
		for r := range rows {
			row := fmt.Appendf(nil, "row%02d", r)
			if v == versions-2 && r%2 == 0 {
				entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: row,
					Mutations: []*tabulapb.Mutation{{Mutation: &tabulapb.Mutation_DeleteFromRow_{DeleteFromRow: &tabulapb.Mutation_DeleteFromRow{}}}}})
				continue
			}
			entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: row,
				Mutations: []*tabulapb.Mutation{set("cf", "q", 7, fmt.Sprintf("v%02d", v))}})
		}
	}
	resp, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) != len(entries) {
		t.Fatalf("%d entries answered, want %d", len(resp.Entries), len(entries))
	}
	for i, en := range resp.Entries {
		if en.Index != int64(i) || en.Code != 0 {
			t.Fatalf("entry %d: index %d code %d %s", i, en.Index, en.Code, en.Message)
		}
	}
	got, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != rows {
		t.Fatalf("read %d rows, want %d", len(got), rows)
	}
	want := fmt.Sprintf("v%02d", versions-1)
	for _, r := range got {
		if len(r.Cells) != 1 || string(r.Cells[0].Value) != want {
			t.Errorf("row %s: cells %v, want the single last write %s", r.Key, r.Cells, want)
		}
	}
}

// TestReadRowsSingleKey covers the point-read path: a key in range, an
// absent key, and a key outside the tablet (ignored, as in a row set).
func TestReadRowsSingleKey(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", []byte("b"), []byte("m"), srv, 1))
	if err := put(e.ctx, c, ref, "cat", set("cf", "q", 1, "old"), set("cf", "q", 2, "new")); err != nil {
		t.Fatal(err)
	}
	read := func(key string, filter *tabulapb.RowFilter) []*tabulapb.Row {
		t.Helper()
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte(key)}}, Filter: filter})
		if err != nil {
			t.Fatalf("read %q: %v", key, err)
		}
		return rows
	}
	if rows := read("cat", nil); len(rows) != 1 || string(rows[0].Key) != "cat" || len(rows[0].Cells) != 2 {
		t.Fatalf("read cat = %v, want both versions", rows)
	}
	latest := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: 1}}
	if rows := read("cat", latest); len(rows) != 1 || len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != "new" {
		t.Fatalf("read cat with a latest-version filter = %v", rows)
	}
	if rows := read("cow", nil); len(rows) != 0 {
		t.Fatalf("absent row read as %v", rows)
	}
	if rows := read("zebra", nil); len(rows) != 0 {
		t.Fatalf("row outside the tablet read as %v", rows)
	}
	_, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{nil}}})
	testkit.WantCode(t, "empty key", err, codes.InvalidArgument, "")
}

// TestReadRowsSendsHeartbeatsWhileScanning: a scan whose filter drops
// every row sends empty messages while it works, so a client bounding the
// wait for each message does not take it for a hung server. The scan asks
// heartbeatDue every few rows; the test decides the answer, so the result
// does not depend on how fast the scan runs.
func TestReadRowsSendsHeartbeatsWhileScanning(t *testing.T) {
	const rows = 3000
	var due atomic.Bool
	var checks atomic.Int64
	old := heartbeatDue
	t.Cleanup(func() { heartbeatDue = old }) // after the server has stopped
	heartbeatDue = func(time.Time) bool { checks.Add(1); return due.Load() }
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	var entries []*tabulapb.MutateRowsRequest_Entry
	for i := range rows {
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: fmt.Appendf(nil, "row%05d", i),
			Mutations: []*tabulapb.Mutation{set("cf", "q", 1, "v")}})
	}
	if _, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries}); err != nil {
		t.Fatal(err)
	}
	none := &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("nothing matches this")}}
	for _, tc := range []struct {
		name string
		due  bool
	}{
		{"heartbeat due at every check", true},
		{"heartbeat never due", false},
	} {
		due.Store(tc.due)
		checks.Store(0)
		stream, err := c.ReadRows(e.ctx, &tabulapb.ReadRowsRequest{Tablet: ref, Filter: none})
		if err != nil {
			t.Fatal(err)
		}
		var empty, got int
		for {
			m, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if len(m.Rows) == 0 {
				empty++
			}
			got += len(m.Rows)
		}
		if got != 0 {
			t.Fatalf("%s: the filter let %d rows through", tc.name, got)
		}
		// The scan checks every 16 rows it passes, filtered or not.
		if n := checks.Load(); n < rows/16 {
			t.Fatalf("%s: the scan of %d rows asked for a heartbeat %d times, want at least %d", tc.name, rows, n, rows/16)
		}
		want := 0
		if tc.due {
			want = int(checks.Load())
		}
		if empty != want {
			t.Fatalf("%s: %d empty messages for %d checks, want %d", tc.name, empty, checks.Load(), want)
		}
	}
}

// TestHeartbeatIsDueAfterTheInterval pins the default trigger: a stream
// quiet for readHeartbeat is due one, a stream that just sent is not.
func TestHeartbeatIsDueAfterTheInterval(t *testing.T) {
	now := time.Now()
	if heartbeatDue(now) {
		t.Error("a heartbeat is due right after a message")
	}
	if !heartbeatDue(now.Add(-readHeartbeat)) {
		t.Errorf("no heartbeat due %s after the last message", readHeartbeat)
	}
}
