package devcluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// TestNamespacesKeepTablesApart is the promise of docs/OPERATIONS.md
// "Namespaces": two namespaces holding a table of the same name never see
// each other's rows, through the native client and through the Bigtable
// API (one instance per namespace), and the default namespace's table of
// that name is a third one. In the secure pass (TABULA_TEST_SECURE=1) a
// principal granted one namespace ("a:*") is refused in the other, through
// both APIs. (The CLI's side: cmd/tabula TestNamespaceCommands.)
func TestNamespacesKeepTablesApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	secure := secureAll()
	c, admin := startWithAdmin(ctx, t, Config{Servers: 1, Auth: secure, GatewayAddr: "127.0.0.1:0"})
	for _, ns := range []string{"a", "b"} {
		if err := admin.Admin().CreateNamespace(ctx, client.NamespaceInfo{Name: ns}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a:users", "b:users", "users"} {
		if err := admin.Admin().CreateTable(ctx, name, []families.Family{families.Default("cf")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Each table gets a row of its own, written natively, and a shared row
	// key with a value naming the table.
	put := func(tbl *client.Table, row, value string) error {
		return tbl.Apply(ctx, []byte(row), client.NewMutation().Set("cf", []byte("q"), 1000, []byte(value)))
	}
	for _, name := range []string{"a:users", "b:users", "users"} {
		tbl := admin.Open(name)
		for { // until the new tablet serves
			err := put(tbl, "shared", name)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("writing %s: %v", name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := put(tbl, "only-"+name, name); err != nil {
			t.Fatal(err)
		}
	}
	native := func(who *client.Client, name string) []string {
		t.Helper()
		var out []string
		it := who.Open(name).ReadRows(ctx, client.InfiniteRange(nil))
		for it.Next() {
			r := it.Row()
			out = append(out, string(r.Key)+"="+string(r.Cells[0].Value))
		}
		if err := it.Err(); err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		return out
	}
	for _, name := range []string{"a:users", "b:users", "users"} {
		want := []string{"only-" + name + "=" + name, "shared=" + name}
		if got := native(admin, name); !slices.Equal(got, want) {
			t.Errorf("native read of %s = %v, want %v", name, got, want)
		}
	}
	if got := native(admin, "default:users"); !slices.Equal(got, []string{"only-users=users", "shared=users"}) {
		t.Errorf("native read of default:users = %v", got)
	}

	// The Bigtable API: instance a is namespace a, b is b, and any other
	// instance the default namespace.
	bt := func(token, instance string) (*bigtable.Client, *bigtable.AdminClient) {
		conn, err := grpc.NewClient(c.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(staticToken(token)))
		if err != nil {
			t.Fatal(err)
		}
		cfg := bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}
		cli, err := bigtable.NewClientWithConfig(ctx, "p", instance, cfg, option.WithGRPCConn(conn))
		if err != nil {
			t.Fatal(err)
		}
		adm, err := bigtable.NewAdminClient(ctx, "p", instance, option.WithGRPCConn(conn))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close(); adm.Close(); conn.Close() })
		return cli, adm
	}
	viaGateway := func(cli *bigtable.Client) ([]string, error) {
		var out []string
		err := cli.Open("users").ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
			out = append(out, r.Key()+"="+string(r["cf"][0].Value))
			return true
		})
		return out, err
	}
	for instance, name := range map[string]string{"a": "a:users", "b": "b:users", "my-instance": "users"} {
		cli, adm := bt(c.AdminToken(), instance)
		want := []string{"only-" + name + "=" + name, "shared=" + name}
		if got, err := viaGateway(cli); err != nil || !slices.Equal(got, want) {
			t.Errorf("instance %s: ReadRows = %v, %v; want %v", instance, got, err, want)
		}
		if tables, err := adm.Tables(ctx); err != nil || !slices.Equal(tables, []string{"users"}) {
			t.Errorf("instance %s: ListTables = %v, %v; want only its own users", instance, tables, err)
		}
	}
	// A write through instance a lands in a:users only.
	acli, _ := bt(c.AdminToken(), "a")
	mut := bigtable.NewMutation()
	mut.Set("cf", "q", 2000, []byte("via-gateway"))
	if err := acli.Open("users").Apply(ctx, "gw-row", mut); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b:users", "users"} {
		if r, err := admin.Open(name).ReadRow(ctx, []byte("gw-row")); err != nil || len(r.Cells) != 0 {
			t.Errorf("a write through instance a is seen in %s: %v, %v", name, r, err)
		}
	}
	if r, err := admin.Open("a:users").ReadRow(ctx, []byte("gw-row")); err != nil || len(r.Cells) != 1 {
		t.Errorf("a write through instance a is not in a:users: %v, %v", r, err)
	}

	if !secure {
		return
	}
	// A principal granted namespace a is refused in b, natively and
	// through the gateway.
	if err := admin.Admin().Grant(ctx, client.Grant{Principal: "team-a", Table: "a:*", Role: "write"}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := admin.Admin().CreateToken(ctx, "team-a", "namespace test")
	if err != nil {
		t.Fatal(err)
	}
	teamA, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer teamA.Close()
	if err := put(teamA.Open("a:users"), "team-a", "a"); err != nil {
		t.Errorf("team-a writing its namespace natively: %v", err)
	}
	for _, name := range []string{"b:users", "users"} {
		if err := put(teamA.Open(name), "team-a", "x"); status.Code(err) != codes.PermissionDenied {
			t.Errorf("team-a writing %s natively: %v, want PERMISSION_DENIED", name, err)
		}
		if _, err := teamA.Open(name).ReadRow(ctx, []byte("shared")); status.Code(err) != codes.PermissionDenied {
			t.Errorf("team-a reading %s natively: %v, want PERMISSION_DENIED", name, err)
		}
	}
	ga, _ := bt(tok, "a")
	if got, err := viaGateway(ga); err != nil || len(got) == 0 {
		t.Errorf("team-a reading instance a through the gateway: %v, %v", got, err)
	}
	gb, _ := bt(tok, "b")
	if got, err := viaGateway(gb); status.Code(err) != codes.PermissionDenied {
		t.Errorf("team-a reading instance b through the gateway: %v, %v; want PERMISSION_DENIED", got, err)
	}
	if err := gb.Open("users").Apply(ctx, "team-a", mut); status.Code(err) != codes.PermissionDenied {
		t.Errorf("team-a writing instance b through the gateway: %v, want PERMISSION_DENIED", err)
	}
}
