package tabletserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
)

// env is one test's cluster: a coordination store (by default the test's
// own in-memory twin of etcd, meta/memstore; newEtcdEnv: a prefix in the
// package's embedded etcd), a storage root, and the servers it started.
type env struct {
	t         *testing.T
	ctx       context.Context
	cli       meta.Store      // the test's view of the store: the twin itself, or a client of etcd
	twin      *memstore.Store // handed to every server (Options.Store); nil on etcd
	endpoints []string        // etcd's endpoints, dialed by every server; nil on the twin
	cluster   string
	layout    meta.Layout
	root      string
	schema    *tabulapb.TableSchema
}

// newEnv returns an env on a twin of its own, on real time: the server
// reaches etcd only through meta.Store, and the tests that use newEnv
// test the server, not etcd. The twin is closed after every server the
// test started (cleanups run last first).
func newEnv(t *testing.T) *env {
	t.Helper()
	twin := memstore.New(memstore.Options{})
	t.Cleanup(func() { twin.Close() })
	e := envOn(t, twin)
	e.twin = twin
	return e
}

// newEtcdEnv returns an env on the package's embedded etcd, for the tests
// that test what the twin does not model (etcd stopped and restarted).
func newEtcdEnv(t *testing.T) *env {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: testEtcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	e := envOn(t, cli)
	e.endpoints = testEtcd.Endpoints()
	return e
}

// envOn returns an env whose test code talks to cli, with the users
// schema written.
func envOn(t *testing.T, cli meta.Store) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	t.Cleanup(cancel)
	cluster := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	e := &env{
		t: t, ctx: ctx, cli: cli, cluster: cluster, layout: meta.NewLayout(cluster), root: t.TempDir(),
		schema: &tabulapb.TableSchema{Name: "users", Families: []*tabulapb.Family{
			{Name: "cf", Bloom: tabulapb.Bloom_BLOOM_ROW}, {Name: "meta", MaxVersions: 1},
		}},
	}
	e.putSchema(e.schema)
	// A cluster whose tablet records are mirrored under assignments/, as
	// every cluster a master of this release led is.
	if _, err := e.cli.Put(e.ctx, e.layout.AssignmentsReadyKey(), "1"); err != nil {
		t.Fatal(err)
	}
	return e
}

// putRecord writes tablets/<table>/<id> as meta's transactions do: with
// its mirror under its server's assignments/, and without the mirror of
// the server the record named before.
func (e *env) putRecord(rec meta.TabletRecord) {
	e.t.Helper()
	if err := e.writeRecord(rec); err != nil {
		e.t.Fatal(err)
	}
}

// writeRecord is putRecord, for a goroutine that may not call Fatal.
func (e *env) writeRecord(rec meta.TabletRecord) error {
	ops, err := e.dropMirror(rec.Table, rec.ID, rec.Server)
	if err != nil {
		return err
	}
	v := meta.EncodeTablet(rec)
	ops = append(ops, clientv3.OpPut(e.layout.TabletKey(rec.Table, rec.ID), v))
	if rec.Server != "" {
		ops = append(ops, clientv3.OpPut(e.layout.AssignmentKey(rec.Server, rec.Table, rec.ID), v))
	}
	_, err = e.cli.Txn(e.ctx).Then(ops...).Commit()
	return err
}

// deleteRecord deletes tablets/<table>/<id> and its mirror.
func (e *env) deleteRecord(table, id string) {
	e.t.Helper()
	ops, err := e.dropMirror(table, id, "")
	if err == nil {
		_, err = e.cli.Txn(e.ctx).Then(append(ops, clientv3.OpDelete(e.layout.TabletKey(table, id)))...).Commit()
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// dropMirror deletes the mirror of the record stored now unless its
// server is keep.
func (e *env) dropMirror(table, id, keep string) ([]clientv3.Op, error) {
	cur, err := meta.GetTablet(e.ctx, e.cli, e.layout, table, id)
	if errors.Is(err, meta.ErrNotFound) || (err == nil && (cur.Server == "" || cur.Server == keep)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []clientv3.Op{clientv3.OpDelete(e.layout.AssignmentKey(cur.Server, table, id))}, nil
}

// putSchema writes tables/<name> as the master would; tablet servers read
// schemas from there.
func (e *env) putSchema(s *tabulapb.TableSchema) {
	e.t.Helper()
	if _, err := e.cli.Put(e.ctx, e.layout.TableKey(s.Name), meta.EncodeTable(meta.TableRecord{Schema: s})); err != nil {
		e.t.Fatal(err)
	}
}

func testLogger() *slog.Logger {
	if os.Getenv("TABLETSERVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// start starts a server with test defaults (LeaseTTL 2s), changed by edit.
func (e *env) start(edit func(*Options)) *Server {
	e.t.Helper()
	opts := Options{
		DataDir: e.root, Etcd: e.endpoints, Cluster: e.cluster, LeaseTTL: 2 * time.Second,
		SplitCheckInterval: -1, LoadWindow: -1, ShutdownTimeout: 5 * time.Second, Logger: testLogger(),
	}
	if e.twin != nil { // not Store: e.twin, which would be a non-nil Store holding nil on etcd
		opts.Store = e.twin
	}
	if edit != nil {
		edit(&opts)
	}
	srv, err := Start(e.ctx, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { srv.Close() })
	return srv
}

// dial returns a client of srv.
func (e *env) dial(srv *Server) tabulapb.TabletServerClient {
	e.t.Helper()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return tabulapb.NewTabletServerClient(conn)
}

// assign writes tablets/<table>/<id> as the master would: assigned to srv
// at epoch.
func (e *env) assign(id string, start, end []byte, srv *Server, epoch int64) meta.TabletRecord {
	e.t.Helper()
	rec := meta.TabletRecord{Table: e.schema.Name, ID: id, Start: start, End: end, State: meta.StateAssigned,
		Server: srv.ID(), Address: srv.Addr(), Epoch: epoch, Lease: srv.leaseID.Load(), Fresh: true}
	e.putRecord(rec)
	return rec
}

// load assigns and loads a tablet and returns its ref.
func (e *env) load(c tabulapb.TabletServerClient, rec meta.TabletRecord) *tabulapb.TabletRef {
	e.t.Helper()
	if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema}); err != nil {
		e.t.Fatalf("LoadTablet %s at epoch %d: %v", rec.ID, rec.Epoch, err)
	}
	return &tabulapb.TabletRef{Table: rec.Table, TabletId: rec.ID, Epoch: rec.Epoch}
}

func (e *env) tablet(id string) meta.VersionedTablet {
	e.t.Helper()
	vt, err := meta.GetTablet(e.ctx, e.cli, e.layout, e.schema.Name, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return vt
}

func set(family, qualifier string, ts int64, value string) *tabulapb.Mutation {
	return &tabulapb.Mutation{Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{
		Family: family, Qualifier: []byte(qualifier), TimestampMicros: ts, Value: []byte(value)}}}
}

func put(ctx context.Context, c tabulapb.TabletServerClient, ref *tabulapb.TabletRef, row string, muts ...*tabulapb.Mutation) error {
	_, err := c.MutateRow(ctx, &tabulapb.MutateRowRequest{Tablet: ref, RowKey: []byte(row), Mutations: muts})
	return err
}

// readAll reads the whole row set of a tablet and returns row key → cell
// values ("family:qualifier@ts=value").
func readAll(ctx context.Context, c tabulapb.TabletServerClient, req *tabulapb.ReadRowsRequest) ([]*tabulapb.Row, error) {
	stream, err := c.ReadRows(ctx, req)
	if err != nil {
		return nil, err
	}
	var rows []*tabulapb.Row
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, resp.Rows...)
	}
}

func rowKeys(rows []*tabulapb.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.Key)
	}
	return out
}

// wantNotServing fails unless err is FAILED_PRECONDITION with a NotServing
// detail naming the tablet.
func wantNotServing(t *testing.T, what string, err error, table, id string) {
	t.Helper()
	testkit.WantCode(t, what, err, codes.FailedPrecondition, "")
	for _, d := range status.Convert(err).Details() {
		if ns, ok := d.(*tabulapb.NotServing); ok {
			if ns.Table != table || ns.TabletId != id {
				t.Fatalf("%s: NotServing names %s/%s, want %s/%s", what, ns.Table, ns.TabletId, table, id)
			}
			return
		}
	}
	t.Fatalf("%s: %v has no NotServing detail", what, err)
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tabletDir is the folder of a tablet with valid names.
func (s *Server) tabletDir(table, id string) string {
	dir, err := s.tabletPath(table, id)
	if err != nil {
		panic(err)
	}
	return dir
}
