package devcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

func TestStartNeedsDir(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Start without Dir: err = %v, want ErrConfig", err)
	}
	if _, err := Start(context.Background(), Config{Dir: t.TempDir(), Servers: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("Start with -1 servers: err = %v, want ErrConfig", err)
	}
}

// waitServing retries a read until every tablet of the table answers.
func readRow(ctx context.Context, t *testing.T, tbl *client.Table, row string) client.Row {
	t.Helper()
	for {
		r, err := tbl.ReadRow(ctx, []byte(row))
		if err == nil {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", row, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDataSurvivesRestartInTheSameDir(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := Config{Dir: dir, Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: secureAll()}

	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.ServerAddrs()); got != 2 {
		t.Errorf("ServerAddrs: %d, want 2", got)
	}
	cli, err := newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	token := c.AdminToken()
	if err := cli.Admin().CreateTable(ctx, "t", []families.Family{families.Default("cf")}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("t")
	for _, row := range []string{"a", "z"} {
		m := client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v-"+row))
		var err error
		for {
			if err = tbl.Apply(ctx, []byte(row), m); err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("writing %s: %v", row, err)
		}
	}
	cli.Close()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tables", "t")); err != nil {
		t.Fatalf("no tablet data under Dir/data: %v", err)
	}

	c, err = Start(ctx, cfg)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer c.Close()
	if c.AdminToken() != token {
		t.Errorf("the admin token changed across a restart")
	}
	cli, err = newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tbl = cli.Open("t")
	for _, row := range []string{"a", "z"} {
		r := readRow(ctx, t, tbl, row)
		if len(r.Cells) != 1 || string(r.Cells[0].Value) != "v-"+row || r.Cells[0].Timestamp != 1000 {
			t.Errorf("after restart, row %s = %+v", row, r.Cells)
		}
	}
	servers, err := cli.Admin().Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, ","); !strings.Contains(got, "ts-1") || !strings.Contains(got, "ts-2") {
		t.Errorf("servers after restart: %s, want ts-1 and ts-2", got)
	}
}

// secureAll runs the clusters with auth (and TLS) on and the clients as
// the admin (`make test` runs the package once this way).
// A function, read while tests run, so that go test's cache knows the
// result depends on it.
func secureAll() bool { return os.Getenv("TABULA_TEST_SECURE") != "" }

// newClient connects to c as its admin when it is secured.
func newClient(ctx context.Context, c *Cluster) (*client.Client, error) {
	return client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: c.AdminToken()})
}

// TestSecuredDevCluster: with Auth, the admin's token works, a client
// without it is refused, and every port speaks TLS only.
func TestSecuredDevCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	c, err := Start(ctx, Config{Dir: dir, Servers: 1, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.AdminToken() == "" || c.ClientTLS() == nil {
		t.Fatal("a secured dev cluster has no admin token or client TLS")
	}
	if b, err := os.ReadFile(c.AdminTokenFile()); err != nil || strings.TrimSpace(string(b)) != c.AdminToken() {
		t.Fatalf("admin token file: %q, %v", b, err)
	}
	if fi, err := os.Stat(c.AdminTokenFile()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file mode: %v, %v; want 0600", fi.Mode(), err)
	}
	cli, err := newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	id, err := cli.Admin().WhoAmI(ctx)
	if err != nil || id.Principal != AdminName || !id.AuthEnabled {
		t.Fatalf("WhoAmI = %+v, %v", id, err)
	}
	anon, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Admin().ListTables(ctx); status.Code(err) != codes.Unauthenticated {
		t.Errorf("anonymous ListTables: %v, want UNAUTHENTICATED", err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if plain, err := client.NewClientWithOptions(pctx, client.Options{Masters: []string{c.MasterAddr()}, ConnectTimeout: 2 * time.Second}); err == nil {
		plain.Close()
		t.Error("a plaintext client connected to the secured master")
	}
}

// TestDevClusterOnAnObjectStore: with Storage set, the tablets live in the
// object store: after the cluster stops and every server's local folder is
// deleted, a restart reads the rows back from the store.
func TestDevClusterOnAnObjectStore(t *testing.T) {
	store := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := Config{Dir: dir, Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: secureAll(),
		Storage: "s3://tabula/dev?endpoint=" + store.Endpoint()}
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Admin().CreateTable(ctx, "t", []families.Family{families.Default("cf")}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("t")
	for _, row := range []string{"a", "z"} {
		m := client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v-"+row))
		if err := tbl.Apply(ctx, []byte(row), m); err != nil {
			t.Fatalf("writing %s: %v", row, err)
		}
	}
	cli.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tables")); err == nil {
		t.Fatal("tablet files were written to the local data folder")
	}
	for _, id := range []string{"ts-1", "ts-2"} {
		if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
			t.Fatal(err)
		}
	}
	c, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err = newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tbl = cli.Open("t")
	for _, row := range []string{"a", "z"} {
		r := readRow(ctx, t, tbl, row)
		if len(r.Cells) != 1 || string(r.Cells[0].Value) != "v-"+row {
			t.Errorf("after restart, row %s = %+v", row, r.Cells)
		}
	}
}

// TestDevClusterStartsItsOwnStore: Storage LocalStore ("s3", the CLI's
// `tabula dev --storage s3`) starts a SeaweedFS for the cluster in
// Dir/seaweed; the tablets live there, not in Dir/data, and survive a
// restart of the whole cluster, store included.
func TestDevClusterStartsItsOwnStore(t *testing.T) {
	seaweedtest.Need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := Config{Dir: dir, Servers: 1, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: secureAll(), Storage: LocalStore}
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.StoreURL(), "s3://tabula/dev?endpoint=http://127.0.0.1:") {
		c.Close()
		t.Fatalf("StoreURL() = %q", c.StoreURL())
	}
	cli, err := newClient(ctx, c)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	if err := cli.Admin().CreateTable(ctx, "t", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	m := client.NewMutation().Set("cf", []byte("q"), 1000, []byte("v"))
	if err := cli.Open("t").Apply(ctx, []byte("r"), m); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "tables")); err == nil {
		t.Fatal("tablet files were written to the local data folder")
	}
	if _, err := os.Stat(filepath.Join(dir, "seaweed")); err != nil {
		t.Fatalf("the store's data is not in Dir/seaweed: %v", err)
	}
	c, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err = newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if r := readRow(ctx, t, cli.Open("t"), "r"); len(r.Cells) != 1 || string(r.Cells[0].Value) != "v" {
		t.Fatalf("after a restart of cluster and store, row r = %+v", r.Cells)
	}
}
