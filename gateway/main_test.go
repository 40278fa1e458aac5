package gateway_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/devcluster"
)

// cluster is the dev cluster (2 tablet servers and a gateway) the tests of
// this package share; each test uses its own tables.
var cluster *devcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		// A fuzzing worker runs only its fuzz target (FuzzWireSink),
		// which needs no cluster; one per worker, under a loaded
		// machine, hung the workers.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cluster, err = devcluster.Start(ctx, devcluster.Config{
		Dir: dir, Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true, GatewayAddr: "127.0.0.1:0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cluster.Close()
	return m.Run()
}

// project and instance are arbitrary: every instance maps to the cluster.
const (
	project  = "proj"
	instance = "inst"
)

// bigtableClients connects the official Go client to the gateway the way
// users do, through BIGTABLE_EMULATOR_HOST.
func bigtableClients(t *testing.T) (*bigtable.Client, *bigtable.AdminClient) {
	t.Helper()
	t.Setenv("BIGTABLE_EMULATOR_HOST", cluster.GatewayAddr())
	ctx := context.Background()
	c, err := bigtable.NewClient(ctx, project, instance)
	if err != nil {
		t.Fatal(err)
	}
	a, err := bigtable.NewAdminClient(ctx, project, instance)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); a.Close() })
	return c, a
}

// bigClient connects the official Go client over a connection that takes
// large messages. Through BIGTABLE_EMULATOR_HOST the Go client dials with
// gRPC's default 4 MiB receive limit, and it wants every ReadRows message to
// end on a row boundary, so no server can send it a row over 4 MiB that
// way; a connection of one's own lifts the limit (docs/GATEWAY.md).
func bigClient(t *testing.T) *bigtable.Client {
	t.Helper()
	conn, err := grpc.NewClient(cluster.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := bigtable.NewClient(context.Background(), project, instance, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); conn.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
