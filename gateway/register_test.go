package gateway_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
)

// TestRegisterOnABareServer: a gateway registered with Server.Register on
// a gRPC server of one's own, which has gRPC's proto codec and not
// convert.Codec, answers scans as protos (messageSink): the official Go
// client reads back every row, across tablets and across messages, and a
// point read, as through Start's server.
func TestRegisterOnABareServer(t *testing.T) {
	ctx := testContext(t)
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	g := grpc.NewServer()
	// Small messages: a scan of the rows below takes several.
	gateway.New(cli, gateway.Options{ChunkBytes: 4 << 10}).Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	defer g.Stop()

	c, a := officialClients(t, lis.Addr().String())
	createTable(t, a, &bigtable.TableConf{TableID: "bare", SplitKeys: []string{"r040", "r080"},
		Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("bare")
	var want []string
	value := strings.Repeat("v", 1000)
	for i := range 120 {
		row := fmt.Sprintf("r%03d", i)
		apply(t, tbl, row, set("cf", "q", 1000, row+value))
		want = append(want, row+": cf:q@1000="+row+value)
	}
	equal(t, "scan", readAll(t, tbl, bigtable.InfiniteRange("")), want)
	r, err := tbl.ReadRow(context.Background(), "r050")
	if err != nil || render(r) != want[50] {
		t.Errorf("ReadRow(r050) = %q, %v", render(r), err)
	}
}
