package gateway_test

import (
	"context"
	"testing"

	"cloud.google.com/go/bigtable"

	"github.com/tabuladb/tabula/gateway"
)

// TestAnyInstanceSegmentIsAccepted: a project or instance id is any
// non-empty segment, as the emulator takes it. The Node.js client without
// a project id sends the literal "{{projectId}}".
func TestAnyInstanceSegmentIsAccepted(t *testing.T) {
	t.Setenv("BIGTABLE_EMULATOR_HOST", cluster.GatewayAddr())
	ctx := testContext(t)
	for _, in := range []struct{ project, instance string }{
		{"{{projectId}}", "inst"},
		{"my project!", "inst:1 (x)"},
	} {
		c, err := bigtable.NewClient(context.Background(), in.project, in.instance)
		if err != nil {
			t.Fatal(err)
		}
		a, err := bigtable.NewAdminClient(context.Background(), in.project, in.instance)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { c.Close(); a.Close() }()
		if _, err := a.Tables(ctx); err != nil {
			t.Errorf("projects/%s/instances/%s: ListTables: %v", in.project, in.instance, err)
			continue
		}
		if err := c.PingAndWarm(ctx); err != nil {
			t.Errorf("projects/%s/instances/%s: PingAndWarm: %v", in.project, in.instance, err)
		}
	}
	c, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "anyname", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	apply(t, c.Open("anyname"), "r", set("cf", "q", 1000, "v"))
	odd, err := bigtable.NewClient(context.Background(), "{{projectId}}", "inst")
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Close()
	equal(t, "rows through {{projectId}}", readAll(t, odd.Open("anyname"), bigtable.InfiniteRange("")), []string{"r: cf:q@1000=v"})
}

// remoteGateway starts a gateway of its own whose client reaches the
// tablet servers over gRPC (the shared one reaches them in process, where
// nothing is marshalled), and returns its address.
func remoteGateway(t *testing.T) string {
	t.Helper()
	p, err := gateway.Start("127.0.0.1:0", tabulaClient(t), gateway.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.Addr()
}

// TestRegexFiltersTakeAnyByte: Bigtable's regex fields are bytes; a
// pattern holding 0xFF (not UTF-8) reaches the tablet servers, in process
// or over gRPC, and matches that byte of a row key, qualifier or value.
func TestRegexFiltersTakeAnyByte(t *testing.T) {
	_, a := bigtableClients(t)
	createTable(t, a, &bigtable.TableConf{TableID: "binre", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	for name, addr := range map[string]string{"in process": cluster.GatewayAddr(), "over gRPC": remoteGateway(t)} {
		t.Setenv("BIGTABLE_EMULATOR_HOST", addr)
		c, err := bigtable.NewClient(context.Background(), project, instance)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tbl := c.Open("binre")
		apply(t, tbl, "k\xff", set("cf", "plain", 1000, "v\xff"))
		apply(t, tbl, "k1", set("cf", "q\xff", 1000, "v1"))
		for _, tc := range []struct {
			name string
			f    bigtable.Filter
			want []string
		}{
			{"row key", bigtable.RowKeyFilter("k\xff"), []string{"k\xff: cf:plain@1000=v\xff"}},
			{"qualifier", bigtable.ColumnFilter("q\xff"), []string{"k1: cf:q\xff@1000=v1"}},
			{"value", bigtable.ValueFilter("v\xff"), []string{"k\xff: cf:plain@1000=v\xff"}},
			{"negated byte", bigtable.RowKeyFilter("k[^\xff]"), []string{"k1: cf:q\xff@1000=v1"}},
		} {
			equal(t, name+": "+tc.name, readAll(t, tbl, bigtable.InfiniteRange(""), bigtable.RowFilter(tc.f)), tc.want)
		}
	}
}
