package tabletserver

import (
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// reopen opens a tablet folder directly with the engine, as the next owner
// would, and returns the bytes it had to replay from its log.
func reopen(t *testing.T, e *env, dir string) (*tablet.Tablet, int64) {
	t.Helper()
	fams, err := familiesFromSchema(e.schema)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := tablet.Open(tablet.Options{Dir: dir, Create: true, Families: fams, DisableBackgroundWork: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb, tb.Stats().MemtableBytes
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
		t.Fatalf("reopen replayed %d memtable bytes from the log; Close should have flushed", replayed)
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
		t.Fatalf("reopen replayed %d memtable bytes; Unload should have flushed", replayed)
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
