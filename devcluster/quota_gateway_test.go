package devcluster

import (
	"context"
	"testing"
	"time"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/quota"
)

// Through the gateway a Bigtable caller over a quota gets the tablet
// server's RESOURCE_EXHAUSTED with its RetryInfo, for MutateRow and for
// each refused entry of MutateRows, when its deadline is shorter than
// the delay (else the gateway's client waits the delay itself).
func TestQuotaRefusalReachesBigtableClientsWithRetryInfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, GatewayAddr: "127.0.0.1:0"})
	if err := admin.Admin().CreateTable(ctx, "g", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	// One row a second: the first write passes, the next waits ~1s.
	setQuota(ctx, t, c, admin, quota.Key{Scope: quota.Table, Name: "g"}, meta.QuotaRecord{WriteRequests: 1})
	conn, err := grpc.NewClient(c.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// The raw Bigtable API: the Go client's surface keeps only the code
	// and message of an error, while Bigtable's clients read RetryInfo
	// inside their retry loops.
	bt := btpb.NewBigtableClient(conn)
	const name = "projects/p/instances/i/tables/g"
	set := []*btpb.Mutation{{Mutation: &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{
		FamilyName: "cf", ColumnQualifier: []byte("q"), TimestampMicros: -1, Value: []byte("v")}}}}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 300*time.Millisecond) }
	var refused error
	for range 5 { // the first write (or first few, as the bucket fills) passes
		sctx, scancel := short()
		_, refused = bt.MutateRow(sctx, &btpb.MutateRowRequest{TableName: name, RowKey: []byte("r"), Mutations: set})
		scancel()
		if refused != nil {
			break
		}
	}
	if status.Code(refused) != codes.ResourceExhausted {
		t.Fatalf("MutateRow over the quota: %v, want RESOURCE_EXHAUSTED", refused)
	}
	if d, ok := retryInfo(refused); !ok || d <= 0 {
		t.Fatalf("MutateRow's refusal has no RetryInfo delay: %v", refused)
	}
	sctx, scancel := short()
	defer scancel()
	stream, err := bt.MutateRows(sctx, &btpb.MutateRowsRequest{TableName: name, Entries: []*btpb.MutateRowsRequest_Entry{
		{RowKey: []byte("a"), Mutations: set}, {RowKey: []byte("b"), Mutations: set}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("MutateRows: %v", err)
	}
	for _, e := range resp.GetEntries() {
		st := status.FromProto(e.GetStatus())
		if st.Code() != codes.ResourceExhausted {
			t.Fatalf("MutateRows entry %d over the quota: %v, want RESOURCE_EXHAUSTED", e.GetIndex(), st.Err())
		}
		if _, ok := retryInfo(st.Err()); !ok {
			t.Fatalf("MutateRows entry %d's refusal has no RetryInfo: %v", e.GetIndex(), st.Err())
		}
	}
}
