package master

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

func (c *cluster) dialNamespaces(addr string) tabulapb.NamespacesClient {
	c.t.Helper()
	return tabulapb.NewNamespacesClient(c.conn(addr))
}

// TestNamespaceAdmin: a table in a missing namespace is NOT_FOUND naming
// the fix; the same table name lives in two namespaces and the default
// one; a non-empty namespace's deletion is FAILED_PRECONDITION naming
// --recursive, which deletes its tables (and their files) with it;
// max_tables is RESOURCE_EXHAUSTED; the default namespace is listed and
// cannot be deleted.
func TestNamespaceAdmin(t *testing.T) {
	c := newCluster(t)
	root := t.TempDir()
	m := c.startMaster(Options{StorageRoot: root})
	c.startServer("s1")
	c.waitLeader(m)
	mc, nc := c.dial(m.Addr()), c.dialNamespaces(m.Addr())
	ctx := context.Background()

	_, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("a:users", "cf")})
	testkit.WantCode(t, "a table in a missing namespace", err, codes.NotFound, "tabula namespace create a")
	_, err = mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("default:users", "cf")})
	testkit.WantCode(t, "default:users", err, codes.InvalidArgument, `write "users"`)
	for _, n := range []*tabulapb.Namespace{{Name: "a"}, {Name: "b", MaxTables: 1}} {
		if _, err := nc.CreateNamespace(ctx, &tabulapb.CreateNamespaceRequest{Namespace: n}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = nc.CreateNamespace(ctx, &tabulapb.CreateNamespaceRequest{Namespace: &tabulapb.Namespace{Name: "a"}})
	testkit.WantCode(t, "namespace a again", err, codes.AlreadyExists, "a")
	_, err = nc.CreateNamespace(ctx, &tabulapb.CreateNamespaceRequest{Namespace: &tabulapb.Namespace{Name: "a.b"}})
	testkit.WantCode(t, "namespace a.b", err, codes.InvalidArgument, "A-Z a-z 0-9 _ -")
	for _, name := range []string{"a:users", "b:users", "users"} {
		if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema(name, "cf")}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	_, err = mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("b:more", "cf")})
	testkit.WantCode(t, "past max_tables", err, codes.ResourceExhausted, "max_tables is 1")

	list, err := nc.ListNamespaces(ctx, &tabulapb.ListNamespacesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.GetNamespaces() {
		names = append(names, n.GetName())
	}
	if !slices.Equal(names, []string{"a", "b", "default"}) {
		t.Fatalf("ListNamespaces = %v", names)
	}
	for ns, want := range map[string][]string{"a": {"a:users"}, "default": {"users"}} {
		d, err := nc.DescribeNamespace(ctx, &tabulapb.DescribeNamespaceRequest{Name: ns})
		if err != nil || !slices.Equal(d.GetTables(), want) {
			t.Fatalf("DescribeNamespace(%s) = %v, %v; want tables %v", ns, d, err, want)
		}
	}

	_, err = nc.DeleteNamespace(ctx, &tabulapb.DeleteNamespaceRequest{Name: "a"})
	testkit.WantCode(t, "deleting a non-empty namespace", err, codes.FailedPrecondition, "--recursive")
	_, err = nc.DeleteNamespace(ctx, &tabulapb.DeleteNamespaceRequest{Name: "default", Recursive: true})
	testkit.WantCode(t, "deleting the default namespace", err, codes.FailedPrecondition, "cannot be deleted")
	if err := os.MkdirAll(filepath.Join(root, "tables", "a:users", "t1"), 0o755); err != nil { // as a tablet server makes it
		t.Fatal(err)
	}
	resp, err := nc.DeleteNamespace(ctx, &tabulapb.DeleteNamespaceRequest{Name: "a", Recursive: true})
	if err != nil || !slices.Equal(resp.GetDeletedTables(), []string{"a:users"}) {
		t.Fatalf("recursive DeleteNamespace = %v, %v", resp, err)
	}
	_, err = nc.DescribeNamespace(ctx, &tabulapb.DescribeNamespaceRequest{Name: "a"})
	testkit.WantCode(t, "a deleted namespace", err, codes.NotFound, "a")
	if _, err := os.Stat(filepath.Join(root, "tables", "a:users")); !os.IsNotExist(err) {
		t.Fatalf("the deleted namespace's table folder: %v", err)
	}
	// The other namespaces' tables of the same name are untouched.
	for _, name := range []string{"b:users", "users"} {
		if _, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: name}); err != nil {
			t.Fatalf("%s after namespace a's deletion: %v", name, err)
		}
	}
}
