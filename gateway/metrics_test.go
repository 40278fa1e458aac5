package gateway_test

import (
	"context"
	"os"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
	"github.com/tabuladb/tabula/metrics"
)

// A gateway with Options.Metrics counts and times its Bigtable API calls
// by method and code; every series it exports is documented.
func TestGatewayMetrics(t *testing.T) {
	ctx := testContext(t)
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	reg := metrics.NewRegistry()
	c, admin := startGateway(t, cli, gateway.Options{Metrics: reg})
	conf := &bigtable.TableConf{TableID: "metrics_t", Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}
	if err := admin.CreateTableFromConf(ctx, conf); err != nil {
		t.Fatal(err)
	}
	defer admin.DeleteTable(ctx, "metrics_t")
	tbl := c.Open("metrics_t")
	for _, row := range []string{"a", "b", "c"} {
		m := bigtable.NewMutation()
		m.Set("cf", "q", bigtable.Now(), []byte("v"))
		if err := tbl.Apply(ctx, row, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.ReadRow(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open("no_such_table").ReadRow(ctx, "a"); err == nil {
		t.Fatal("read of a missing table succeeded")
	}

	fs, err := metrics.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	const svc = "google.bigtable.v2.Bigtable"
	for _, w := range []struct {
		method, code string
		want         float64
	}{{"MutateRow", "OK", 3}, {"ReadRows", "OK", 1}, {"ReadRows", "NotFound", 1}} {
		for _, name := range []string{"tabula_grpc_server_handled_total", "tabula_grpc_server_handling_seconds"} {
			if v, _ := fs.Sum(name, map[string]string{"service": svc, "method": w.method, "code": w.code}); v != w.want {
				t.Errorf("%s{%s %s} = %v, want %v", name, w.method, w.code, v, w.want)
			}
		}
	}
	f, err := os.Open("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := metrics.Documented(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range fs.Tabula() {
		if _, ok := doc[name]; !ok {
			t.Errorf("%s is exported but not documented", name)
		}
	}
}

// startGateway starts a gateway of its own on cli, stopped when t ends,
// and connects the official clients to it.
func startGateway(t *testing.T, cli *client.Client, opts gateway.Options) (*bigtable.Client, *bigtable.AdminClient) {
	t.Helper()
	p, err := gateway.Start("127.0.0.1:0", cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return officialClients(t, p.Addr())
}

// officialClients connects the official data and admin clients to the
// gateway at addr over one connection that takes large messages, as
// `tabula bench` does (no metrics export, no sessions).
func officialClients(tb testing.TB, addr string) (*bigtable.Client, *bigtable.AdminClient) {
	tb.Helper()
	ctx := context.Background()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}, DisableSession: true}
	c, err := bigtable.NewClientWithConfig(ctx, project, instance, cfg, option.WithGRPCConn(conn))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := bigtable.NewAdminClient(ctx, project, instance, option.WithGRPCConn(conn))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(); a.Close(); conn.Close() })
	return c, a
}
