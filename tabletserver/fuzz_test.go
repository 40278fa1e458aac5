package tabletserver

import (
	"context"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// fuzzServer is a Server with one tablet held and no etcd: enough for the
// data calls, which touch etcd only to re-read a schema after an unknown
// family (without a store they answer NOT_FOUND at once).
func fuzzServer(f *testing.F) (*Server, *tabulapb.TabletRef) {
	fams, err := familiesFromSchema(&tabulapb.TableSchema{Families: []*tabulapb.Family{{Name: "cf"}, {Name: "meta", MaxVersions: 1}}})
	if err != nil {
		f.Fatal(err)
	}
	tb, err := tablet.Open(tablet.Options{Dir: f.TempDir(), Create: true, Families: fams, Start: []byte("b"), End: []byte("y"),
		DisableBackgroundWork: true, SyncMode: 2 /* none */})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { tb.Close() })
	s := &Server{
		opts: Options{LeaseTTL: time.Hour}, logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		base: time.Now(), tablets: map[string]*held{},
	}
	s.safeUntil.Store(math.MaxInt64)
	s.tablets[tabletKey("users", "t1")] = &held{table: "users", id: "t1", epoch: 1, t: tb}
	return s, &tabulapb.TabletRef{Table: "users", TabletId: "t1", Epoch: 1}
}

// FuzzMutateRowRequest decodes arbitrary bytes as a MutateRowRequest (as
// gRPC would) and runs it against a real tablet: the server never panics
// and answers only the codes a bad request may get, never INTERNAL,
// UNAVAILABLE or UNKNOWN.
func FuzzMutateRowRequest(f *testing.F) {
	s, ref := fuzzServer(f)
	seeds := []*tabulapb.MutateRowRequest{
		{RowKey: []byte("c"), Mutations: []*tabulapb.Mutation{set("cf", "q", 1, "v")}},
		{RowKey: []byte("c"), Mutations: []*tabulapb.Mutation{set("nope", "q", 1, "v")}},
		{RowKey: []byte("z"), Mutations: []*tabulapb.Mutation{set("cf", "q", -1, "v")}},
		{RowKey: []byte("d"), Mutations: []*tabulapb.Mutation{{Mutation: &tabulapb.Mutation_DeleteFromColumn_{
			DeleteFromColumn: &tabulapb.Mutation_DeleteFromColumn{Family: "cf", Qualifier: []byte("q"), StartTimestampMicros: 5, EndTimestampMicros: 2}}}}},
		{RowKey: []byte("e"), Mutations: []*tabulapb.Mutation{{Mutation: &tabulapb.Mutation_DeleteFromRow_{}}}},
		{},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(b, false)
	}
	allowed := map[codes.Code]bool{codes.OK: true, codes.InvalidArgument: true, codes.NotFound: true,
		codes.FailedPrecondition: true, codes.ResourceExhausted: true}
	f.Fuzz(func(t *testing.T, b []byte, useRef bool) {
		req := &tabulapb.MutateRowRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			return
		}
		if useRef {
			req.Tablet = ref
		}
		_, err := s.MutateRow(context.Background(), req)
		if code := status.Code(err); !allowed[code] {
			t.Fatalf("MutateRow(%v) answered %v: %v", req, code, err)
		}
	})
}

// FuzzReadRowsFilter runs arbitrary filters and row sets through
// CheckAndMutateRow's read path and ReadRows' request conversion.
func FuzzReadRowsFilter(f *testing.F) {
	s, ref := fuzzServer(f)
	if _, err := s.MutateRow(context.Background(), &tabulapb.MutateRowRequest{Tablet: ref, RowKey: []byte("c"),
		Mutations: []*tabulapb.Mutation{set("cf", "q", 1, "v")}}); err != nil {
		f.Fatal(err)
	}
	seeds := []*tabulapb.CheckAndMutateRowRequest{
		{RowKey: []byte("c"), PredicateFilter: &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte("v.*")}},
			TrueMutations: []*tabulapb.Mutation{set("cf", "t", 1, "x")}},
		{RowKey: []byte("c"), PredicateFilter: &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_Chain_{Chain: &tabulapb.RowFilter_Chain{
			Filters: []*tabulapb.RowFilter{{Filter: &tabulapb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: -1}}}}}}},
		{RowKey: []byte("c"), PredicateFilter: &tabulapb.RowFilter{Filter: &tabulapb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte("([")}}},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	allowed := map[codes.Code]bool{codes.OK: true, codes.InvalidArgument: true, codes.NotFound: true,
		codes.FailedPrecondition: true, codes.ResourceExhausted: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		req := &tabulapb.CheckAndMutateRowRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			return
		}
		req.Tablet = ref
		_, err := s.CheckAndMutateRow(context.Background(), req)
		if code := status.Code(err); !allowed[code] {
			t.Fatalf("CheckAndMutateRow(%v) answered %v: %v", req, code, err)
		}
	})
}
