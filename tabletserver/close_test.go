package tabletserver

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// reopen opens a tablet folder directly with the engine, on a shared log
// of its own, as the next owner would, and returns how many write batches
// it replayed from the previous owner's log (the engine seals what it
// replayed into its manifest at open).
func reopen(t *testing.T, e *env, dir string) (*tablet.Tablet, int64) {
	t.Helper()
	fams, err := familiesFromSchema(e.schema)
	if err != nil {
		t.Fatal(err)
	}
	before, epoch, _, err := manifest.LoadNewest(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	wal, err := sharedlog.Open(sharedlog.Options{Root: e.root, Name: "reader-" + strconv.FormatInt(time.Now().UnixNano(), 16)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wal.Close() })
	tb, err := tablet.Open(tablet.Options{Dir: dir, Create: true, Families: fams, DisableBackgroundWork: true,
		Epoch: epoch + 1, Log: wal, Name: tabletKey(filepath.Base(filepath.Dir(dir)), filepath.Base(dir))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	after, _, err := manifest.Load(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	return tb, int64(after.LastSeq - before.LastSeq)
}

func TestCloseFlushesAndReleasesTheLease(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "alice", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	resp, err := e.cli.Get(e.ctx, e.layout.ServerKey(srv.ID()))
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("server key after Close: %v, %v; want it gone with the lease", resp.Kvs, err)
	}
	tb, replayed := reopen(t, e, srv.tabletDir("users", "t1"))
	if replayed != 0 {
		t.Fatalf("reopen replayed %d writes from the log; Close should have flushed", replayed)
	}
	cells, err := tb.ReadRow(e.ctx, []byte("alice"), nil)
	if err != nil || len(cells) != 1 || string(cells[0].Value) != "v" {
		t.Fatalf("after Close the tablet reads %v, %v", cells, err)
	}
}

func TestUnloadFlushes(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "alice", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatal(err)
	}
	wantNotServing(t, "write after unload", put(e.ctx, c, ref, "bob", set("cf", "q", 1, "v")), "users", "t1")
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatalf("unloading a tablet not held: %v", err)
	}
	tb, replayed := reopen(t, e, srv.tabletDir("users", "t1"))
	if replayed != 0 {
		t.Fatalf("reopen replayed %d writes; Unload should have flushed", replayed)
	}
	if cells, err := tb.ReadRow(e.ctx, []byte("alice"), nil); err != nil || len(cells) != 1 {
		t.Fatalf("after unload the tablet reads %v, %v", cells, err)
	}
}

func TestFencedCloseDoesNotFlush(t *testing.T) {
	e := newEnv(t)
	r := &renewals{}
	srv := e.startWithRenewals(r, func(o *Options) { o.PauseRenewals = r.isPaused; o.DisableBackgroundWork = true })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "alice", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	_, _, fences := r.pause(t) // no renewal can make it serve again
	eventually(t, 10*time.Second, "the fence", func() bool { return srv.Fences() == fences && !srv.Serving() })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	tb, replayed := reopen(t, e, srv.tabletDir("users", "t1"))
	if replayed == 0 {
		t.Fatal("a fenced server flushed its tablet; it must leave it to the log")
	}
	if cells, err := tb.ReadRow(e.ctx, []byte("alice"), nil); err != nil || len(cells) != 1 {
		t.Fatalf("the next owner reads %v, %v", cells, err)
	}
}

// A tablet of a table being deleted is unloaded without a flush: the flush
// would only write (on an object store, upload) files about to be deleted.
func TestUnloadOfADeletedTableDoesNotFlush(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "alice", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	deleting := proto.Clone(e.schema).(*tabulapb.TableSchema)
	deleting.State = meta.TableDeleting
	e.putSchema(deleting)
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatal(err)
	}
	st, _, err := manifest.Load(nil, srv.tabletDir("users", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Files) != 0 || st.LastSeq != 0 {
		t.Fatalf("unloading a tablet of a deleted table flushed it: %d files, last seq %d", len(st.Files), st.LastSeq)
	}
}

// A server given its store (Options.Store) does not close it: whoever
// made it does, after the server's Close. The store serves on, and a next
// server starts on it.
func TestCloseLeavesAGivenStoreOpen(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.twin.Put(e.ctx, "after-close", "v"); err != nil {
		t.Fatalf("the store after the server's Close: %v", err)
	}
	next := e.start(nil)
	resp, err := e.cli.Get(e.ctx, e.layout.ServerKey(next.ID()))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the next server's key: %v, %v", resp, err)
	}
}

// Start needs one way to etcd: endpoints to dial, or a store, not both.
func TestStartWithoutEtcdOrStoreIsRefused(t *testing.T) {
	_, err := Start(t.Context(), Options{DataDir: t.TempDir()})
	if !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("Start with neither Etcd nor Store: %v, want cell.ErrInvalid", err)
	}
	twin := memstore.New(memstore.Options{})
	defer twin.Close()
	_, err = Start(t.Context(), Options{DataDir: t.TempDir(), Etcd: []string{"127.0.0.1:1"}, Store: twin})
	if !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("Start with both Etcd and Store: %v, want cell.ErrInvalid", err)
	}
}

// A lease renewal that races Close (the lease loop runs until after the
// shared log is closed) must not start a new shared log: nothing would
// close it (goleak saw its janitor left running).
func TestNoSharedLogStartsAfterClose(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	lease := srv.leaseID.Load()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.openLog(lease); !errors.Is(err, ErrClosed) {
		t.Fatalf("openLog after Close: %v, want ErrClosed", err)
	}
	if _, err := srv.sharedLog(); !errors.Is(err, ErrClosed) {
		t.Fatalf("sharedLog after Close: %v, want ErrClosed", err)
	}
}
