package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestBigtableAPIServedByATabletServer: `tabula tabletserver
// --bigtable-addr` serves the Bigtable API from the tablet server's
// process. Through it the official Go client writes and reads back rows
// of every tablet of a table spread over the cluster's four servers: the
// tablets this server holds are reached in process, the others' over
// gRPC; on a secured cluster (TABULA_TEST_SECURE) the server's own client
// presents the admin's --token, and the official client sends it too, as
// each Bigtable call runs as its caller (docs/GATEWAY.md "Security").
func TestBigtableAPIServedByATabletServer(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{})
	bt := freeAddr(t)
	extra := []string{"--bigtable-addr", bt, "--master", strings.Join(c.masterAddrs(), ",")}
	if c.sec != nil {
		extra = append(extra, "--token", c.sec.token)
	}
	p := c.addServer(t, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		conn, err := net.DialTimeout("tcp", bt, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if ctx.Err() != nil || !p.running() {
			t.Fatalf("the Bigtable API of %s never listened on %s:\n%s", p.id, bt, p.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if c.sec != nil {
		// Every Bigtable call runs as its caller's token: the test's
		// calls as the admin's.
		dial = append(dial, grpc.WithPerRPCCredentials(bearerToken(c.sec.token)))
	}
	conn, err := grpc.NewClient(bt, dial...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cli, err := bigtable.NewClientWithConfig(ctx, "p", "i", bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	adm, err := bigtable.NewAdminClient(ctx, "p", "i", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var splits []string
	for i := 1; i < 8; i++ {
		splits = append(splits, fmt.Sprintf("r%d", i))
	}
	if err := adm.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: "btserver", SplitKeys: splits,
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}}); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("btserver")
	var rows []string
	var muts []*bigtable.Mutation
	for i := 0; i < 8; i++ {
		for j := 0; j < 5; j++ {
			row := fmt.Sprintf("r%d/%02d", i, j)
			m := bigtable.NewMutation()
			m.Set("cf", "v", 1000, []byte(row))
			rows, muts = append(rows, row), append(muts, m)
		}
	}
	errs, err := tbl.ApplyBulk(ctx, rows, muts)
	if err != nil || errs != nil {
		t.Fatalf("ApplyBulk: %v %v", err, errs)
	}
	for _, row := range rows {
		r, err := tbl.ReadRow(ctx, row)
		if err != nil || len(r["cf"]) != 1 || string(r["cf"][0].Value) != row {
			t.Fatalf("ReadRow %s: %v, %v", row, r, err)
		}
	}
	n := 0
	if err := tbl.ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool { n++; return true }); err != nil || n != len(rows) {
		t.Fatalf("scan: %d rows, %v; want %d", n, err, len(rows))
	}
}

// bearerToken sends a Tabula token as a Bigtable client's credentials,
// over a plaintext port (docs/GATEWAY.md "Security").
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return false }
