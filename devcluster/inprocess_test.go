package devcluster

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// grpcCalls counts a client's gRPC calls to tablet servers by address.
type grpcCalls struct {
	mu sync.Mutex
	n  map[string]int
}

// dialOptions are plaintext dial options (TLS, when the client has it,
// replaces them) that count the tablet server calls.
func (g *grpcCalls) dialOptions() []grpc.DialOption {
	g.n = make(map[string]int)
	count := func(cc *grpc.ClientConn, method string) {
		if strings.HasPrefix(method, "/tabula.v1.TabletServer/") {
			g.mu.Lock()
			g.n[cc.Target()]++
			g.mu.Unlock()
		}
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			count(cc, method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			count(cc, method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

func (g *grpcCalls) to(addr string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[addr]
}

// dataCalls is how many data calls (MutateRow, ReadRows) the server
// labelled server handled, from its gRPC metrics: in-process calls are
// counted there too.
func dataCalls(t *testing.T, reg *prometheus.Registry, server string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "tabula_grpc_server_handled_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["server"] == server && (l["method"] == "MutateRow" || l["method"] == "ReadRows") {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// startWithAdmin starts a cluster of cfg (with the tests' lease and no
// fsync, and a Dir of its own unless cfg names one) and connects its
// admin; both are closed by t.Cleanup.
func startWithAdmin(ctx context.Context, t *testing.T, cfg Config) (*Cluster, *client.Client) {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.LeaseTTL, cfg.NoFsync = 5*time.Second, true
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	admin, err := newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return c, admin
}

// splitTable creates a table of 26 tablets (one per letter) and moves
// those from "n" on to ts-2, once all are assigned (the master places new
// tablets on one server), so that each of the two servers holds some.
func splitTable(ctx context.Context, t *testing.T, cli *client.Client, name string) {
	t.Helper()
	var splits [][]byte
	for c := 'b'; c <= 'z'; c++ {
		splits = append(splits, []byte{byte(c)})
	}
	if err := cli.Admin().CreateTable(ctx, name, []families.Family{families.Default("cf")}, splits); err != nil {
		t.Fatal(err)
	}
	for {
		tabs, err := cli.Admin().Tablets(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		assigned := 0
		for _, tb := range tabs {
			if tb.State == "assigned" && tb.Server != "" {
				assigned++
			}
		}
		if assigned == len(tabs) {
			for _, tb := range tabs {
				if string(tb.Start) >= "n" && tb.Server != "ts-2" {
					if _, err := cli.Admin().MoveTablet(ctx, name, tb.ID, "ts-2"); err != nil {
						t.Fatalf("moving tablet %s to ts-2: %v", tb.ID, err)
					}
				}
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("tablets of %s: %+v; want all assigned", name, tabs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A client with one of two tablet servers in Options.Local reaches that
// one in process — no gRPC call goes to it, yet it handles the data calls
// — and every other over gRPC: the rows of the other server's tablets are
// written and read as well (forwarded, not refused or misrouted).
func TestLocalServerIsCalledInProcessAndTheOthersOverGRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 2, Auth: secureAll(), Metrics: reg})
	splitTable(ctx, t, admin, "inproc")

	var calls grpcCalls
	local, remote := c.Servers()[0], c.Servers()[1]
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: c.AdminToken(),
		DialOptions: calls.dialOptions(), Local: []client.LocalServer{local}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tbl := cli.Open("inproc")
	before := dataCalls(t, reg, local.ID())
	for r := 'a'; r <= 'z'; r++ {
		if err := tbl.Apply(ctx, []byte{byte(r)}, client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v-"+string(r)))); err != nil {
			t.Fatalf("writing %c: %v", r, err)
		}
	}
	for r := 'a'; r <= 'z'; r++ {
		row, err := tbl.ReadRow(ctx, []byte{byte(r)})
		if err != nil || len(row.Cells) != 1 || string(row.Cells[0].Value) != "v-"+string(r) {
			t.Fatalf("reading %c: %+v, %v", r, row, err)
		}
	}
	it := tbl.ReadRows(ctx, client.InfiniteRange(nil))
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil || n != 26 {
		t.Fatalf("scan: %d rows, %v; want 26", n, err)
	}
	if got := calls.to(local.Addr()); got != 0 {
		t.Errorf("%d gRPC calls to the local server %s; want none (in process)", got, local.ID())
	}
	if got := calls.to(remote.Addr()); got == 0 {
		t.Errorf("no gRPC call to the other server %s; its tablets' rows must go over gRPC", remote.ID())
	}
	if got := dataCalls(t, reg, local.ID()) - before; got == 0 {
		t.Errorf("the local server %s handled no data call", local.ID())
	}
}

// Through the in-process path a secured server authenticates and
// authorizes as over gRPC: the admin's token may write, a caller without
// credentials is UNAUTHENTICATED, a reader may read but not write
// (PERMISSION_DENIED); and none of it went over gRPC.
func TestInProcessCallsAreAuthorized(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: true})
	if err := admin.Admin().CreateTable(ctx, "sec", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "reader", Table: "sec", Role: "read"}); err != nil {
		t.Fatal(err)
	}
	readerToken, _, err := admin.Admin().CreateToken(ctx, "reader", "in-process test")
	if err != nil {
		t.Fatal(err)
	}
	var calls grpcCalls
	dial := calls.dialOptions()
	local := func(token string) *client.Table {
		cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: token,
			DialOptions: dial, Local: []client.LocalServer{c.Servers()[0]}, RetryTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli.Open("sec")
	}
	set := client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v"))
	var err2 error
	for { // until the new tablet serves
		if err2 = local(c.AdminToken()).Apply(ctx, []byte("r"), set); err2 == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err2 != nil {
		t.Fatalf("the admin's write: %v", err2)
	}
	if err := local("").Apply(ctx, []byte("r"), set); status.Code(err) != codes.Unauthenticated {
		t.Errorf("write without credentials: %v, want UNAUTHENTICATED", err)
	}
	reader := local(readerToken)
	if row, err := reader.ReadRow(ctx, []byte("r")); err != nil || len(row.Cells) != 1 {
		t.Errorf("the reader's read: %+v, %v", row, err)
	}
	if err := reader.Apply(ctx, []byte("r"), set); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the reader's write: %v, want PERMISSION_DENIED", err)
	}
	if got := calls.to(c.Servers()[0].Addr()); got != 0 {
		t.Errorf("%d gRPC calls to the local server; want none (in process)", got)
	}
}

// The dev cluster's gateway reaches its tablet servers in process: a
// Bigtable write and read through it are in-process calls of the server.
func TestDevGatewayCallsItsServersInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, GatewayAddr: "127.0.0.1:0"})
	if err := admin.Admin().CreateTable(ctx, "dev", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(c.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	bt := btpb.NewBigtableClient(conn)
	name := "projects/p/instances/i/tables/dev"
	before := c.Servers()[0].InProcessCalls()
	if _, err := bt.MutateRow(ctx, &btpb.MutateRowRequest{TableName: name, RowKey: []byte("r"), Mutations: []*btpb.Mutation{{
		Mutation: &btpb.Mutation_SetCell_{SetCell: &btpb.Mutation_SetCell{FamilyName: "cf", ColumnQualifier: []byte("q"), TimestampMicros: 1000, Value: []byte("v")}}}}}); err != nil {
		t.Fatal(err)
	}
	stream, err := bt.ReadRows(ctx, &btpb.ReadRowsRequest{TableName: name})
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		chunks += len(resp.Chunks)
	}
	if chunks == 0 {
		t.Fatal("the row written through the gateway was not read back")
	}
	if got := c.Servers()[0].InProcessCalls() - before; got < 2 {
		t.Errorf("%d in-process calls for a write and a read through the dev gateway; want at least 2", got)
	}
}
