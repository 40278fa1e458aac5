package tablet

import (
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// sharedLogAt opens the shared log name under root on fsys, closed at the
// end of the test.
func sharedLogAt(t *testing.T, fsys vfs.FS, root, name string, mode wal.SyncMode) *sharedlog.Log {
	t.Helper()
	l, err := sharedlog.Open(sharedlog.Options{FS: fsys, Root: root, Name: name, SyncMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// A tablet that closes with everything flushed saves a last manifest naming
// no log: its next owner reads nothing of the old server's log (here: the
// old log is gone, and the open still succeeds with every row).
func TestCleanCloseReleasesTheSharedLog(t *testing.T) {
	root := t.TempDir()
	dir := root + "/tables/users/t1"
	opts := testOptions(dir)
	opts.Epoch, opts.Name = 1, "users/t1"
	opts.Log = sharedLogAt(t, nil, root, "old", wal.SyncNone)
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 1, "v1"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if st, _, _ := manifest.Load(nil, dir); st.Log != "old" {
		t.Fatalf("while open the manifest names log %q, want old", st.Log)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	st, found, err := manifest.Load(nil, dir)
	if err != nil || !found || st.Log != "" {
		t.Fatalf("after a clean close the manifest names log %q (%v, %v), want none", st.Log, found, err)
	}
	if err := vfs.Default.RemoveAll(sharedlog.Dir(root, "old")); err != nil {
		t.Fatal(err)
	}
	opts.Epoch, opts.Log = 2, sharedLogAt(t, nil, root, "new", wal.SyncNone)
	next := openTablet(t, opts)
	if got := scan(t, next, ReadOptions{}); got != "r1{a:q@1=v1}" {
		t.Fatalf("the next owner reads %q", got)
	}
}

// With sync=none on an object store, a tablet's last records may still be
// in the server's upload spool when it closes without a flush (a failed or
// fenced tablet); closing it syncs the shared log, so its next owner (here
// on the same server) replays them. Found by the model test on SeaweedFS
// (seed 1796103034655894095), where a reopened tablet lost its last write.
func TestUncleanCloseSyncsTheSharedLog(t *testing.T) {
	fsys := startObjectStore(t)
	dir := "/model/tables/users/t1"
	opts := testOptions(dir)
	opts.FS, opts.Epoch, opts.Name = fsys, 1, "users/t1"
	opts.Log = sharedLogAt(t, fsys, "/model", "server", wal.SyncNone)
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 1, "v1"))
	if err := tb.Close(); err != nil { // unflushed: an unclean close
		t.Fatal(err)
	}
	opts.Epoch = 2
	next := openTablet(t, opts)
	if got := scan(t, next, ReadOptions{}); got != "r1{a:q@1=v1}" {
		t.Fatalf("after an unclean close on sync=none the tablet reads %q, want r1", got)
	}
}
