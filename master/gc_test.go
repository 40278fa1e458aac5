package master

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs"
)

// gcEnv is a leader master over a storage root whose sweep the test runs by
// hand (the periodic loop is off unless the test asks for it).
type gcEnv struct {
	t    *testing.T
	c    *cluster
	m    *Master
	root string
}

func newGCEnv(t *testing.T, opts Options) *gcEnv {
	t.Helper()
	c := newCluster(t)
	root := t.TempDir()
	opts.StorageRoot = root
	if opts.GCInterval == 0 {
		opts.GCInterval = -1
	}
	if opts.GCGrace == 0 {
		opts.GCGrace = time.Minute
	}
	m := c.startMaster(opts)
	c.waitLeader(m)
	return &gcEnv{t: t, c: c, m: m, root: root}
}

// dir is the folder of tablet id of table.
func (e *gcEnv) dir(table, id string) string {
	return filepath.Join(e.root, "tables", table, id)
}

// sweep runs one sweep in the current term.
func (e *gcEnv) sweep() gcResult {
	e.t.Helper()
	e.m.mu.Lock()
	term := e.m.mu.leader
	e.m.mu.Unlock()
	if term == nil {
		e.t.Fatal("the master is not the leader")
	}
	res, err := e.m.sweep(context.Background(), term)
	if err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	return res
}

// putTablet writes a tablet record for id into etcd.
func (e *gcEnv) putTablet(table, id string, start, end string) {
	e.t.Helper()
	rec := meta.TabletRecord{Table: table, ID: id, State: meta.StateUnassigned}
	if start != "" {
		rec.Start = []byte(start)
	}
	if end != "" {
		rec.End = []byte(end)
	}
	if _, err := e.c.cli.Put(context.Background(), e.c.layout.TabletKey(table, id), meta.EncodeTablet(rec)); err != nil {
		e.t.Fatal(err)
	}
}

// deleteTablet removes id's record from etcd.
func (e *gcEnv) deleteTablet(table, id string) {
	e.t.Helper()
	if _, err := e.c.cli.Delete(context.Background(), e.c.layout.TabletKey(table, id)); err != nil {
		e.t.Fatal(err)
	}
}

var gcFamilies = []families.Family{{Name: "cf", MaxVersions: 1}}

func openTablet(t *testing.T, dir string, start, end []byte) *tablet.Tablet {
	t.Helper()
	tb, err := tablet.Open(tablet.Options{Dir: dir, Create: true, Families: gcFamilies, Start: start, End: end, DisableBackgroundWork: true})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// writeTablet makes a real tablet in dir holding rows, flushed to an
// SSTable, and closes it.
func writeTablet(t *testing.T, dir string, rows ...string) {
	t.Helper()
	tb := openTablet(t, dir, nil, nil)
	defer tb.Close()
	fill(t, tb, rows...)
}

func fill(t *testing.T, tb *tablet.Tablet, rows ...string) {
	t.Helper()
	ctx := context.Background()
	for _, r := range rows {
		err := tb.Apply(ctx, []byte(r), []cell.Mutation{{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v-" + r)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// splitTablet makes a real tablet in parentDir with rows a..f and splits it
// at "d" into leftDir and rightDir, whose manifests reference the parent's
// files.
func splitTablet(t *testing.T, parentDir, leftDir, rightDir string) {
	t.Helper()
	tb := openTablet(t, parentDir, nil, nil)
	fill(t, tb, "a", "b", "c", "d", "e", "f")
	if err := tb.Split(context.Background(), []byte("d"), leftDir, rightDir); err != nil {
		tb.Close()
		t.Fatal(err)
	}
	tb.Close()
	for _, d := range []string{leftDir, rightDir} {
		refs, err := manifest.Referenced(nil, d)
		if err != nil || len(refs) == 0 {
			t.Fatalf("split child %s references %v (err %v); want the parent's files", d, refs, err)
		}
	}
}

// compactAway major-compacts the tablet in dir so that it owns all its
// files and references none of its parent's.
func compactAway(t *testing.T, dir string, start, end []byte) {
	t.Helper()
	tb := openTablet(t, dir, start, end)
	defer tb.Close()
	if err := tb.Compact(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	refs, err := manifest.Referenced(nil, dir)
	if err != nil || len(refs) != 0 {
		t.Fatalf("after a major compaction %s still references %v (err %v)", dir, refs, err)
	}
}

// age sets the modification time of dir and everything in it to d ago.
func age(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	when := time.Now().Add(-d)
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Children first, so that touching them does not renew their folder.
	slices.Reverse(paths)
	for _, p := range paths {
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func wantExist(t *testing.T, want bool, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if got := exists(t, d); got != want {
			t.Errorf("%s exists = %v, want %v", d, got, want)
		}
	}
}

// orphan makes a folder with one file in it, as a leftover would be.
func orphan(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "000001.log"), []byte("leftover"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGCKeepsSplitParentWhileAChildReferencesIt(t *testing.T) {
	e := newGCEnv(t, Options{})
	parent, left, right := e.dir("t", "parent"), e.dir("t", "left"), e.dir("t", "right")
	splitTablet(t, parent, left, right)
	e.putTablet("t", "left", "", "d")
	e.putTablet("t", "right", "d", "")
	age(t, filepath.Join(e.root, "tables"), time.Hour)

	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v while both children reference the parent", res.removed)
	}
	wantExist(t, true, parent, left, right)

	// Once the left child owns its files only the right one holds the
	// parent.
	compactAway(t, left, nil, []byte("d"))
	age(t, filepath.Join(e.root, "tables"), time.Hour)
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v while the right child references the parent", res.removed)
	}
	wantExist(t, true, parent)

	compactAway(t, right, []byte("d"), nil)
	// Fresh files in the children do not matter: they are live.
	age(t, parent, time.Hour)
	res := e.sweep()
	if !slices.Equal(res.removed, []string{parent}) {
		t.Fatalf("removed %v, want just the parent %s", res.removed, parent)
	}
	wantExist(t, false, parent)
	wantExist(t, true, left, right)
}

func TestGCDeletesOrphanOnlyAfterGracePeriod(t *testing.T) {
	e := newGCEnv(t, Options{GCGrace: time.Minute})
	e.putTablet("t", "live", "", "")
	writeTablet(t, e.dir("t", "live"), "a", "b")
	stray := e.dir("t", "stray")
	orphan(t, stray)

	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v within the grace period", res.removed)
	}
	wantExist(t, true, stray)

	// A fresh file in an old folder still counts as fresh.
	age(t, stray, time.Hour)
	if err := os.WriteFile(filepath.Join(stray, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stray, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v though it holds a fresh file", res.removed)
	}

	age(t, stray, 2*time.Minute)
	res := e.sweep()
	if !slices.Equal(res.removed, []string{stray}) {
		t.Fatalf("removed %v, want %s", res.removed, stray)
	}
	wantExist(t, true, e.dir("t", "live"))
}

func TestGCNeverTouchesLiveTablets(t *testing.T) {
	e := newGCEnv(t, Options{})
	// A live tablet of another table with the same id still counts: ids
	// are compared across tables.
	e.putTablet("t", "a", "", "m")
	e.putTablet("t", "b", "m", "")
	e.putTablet("u", "c", "", "")
	writeTablet(t, e.dir("t", "a"), "a")
	orphan(t, e.dir("t", "b")) // no manifest yet: a tablet never loaded
	writeTablet(t, e.dir("t", "c"), "x")
	age(t, filepath.Join(e.root, "tables"), 24*time.Hour)
	for i := 0; i < 3; i++ {
		if res := e.sweep(); len(res.removed) != 0 {
			t.Fatalf("sweep %d removed %v", i, res.removed)
		}
	}
	wantExist(t, true, e.dir("t", "a"), e.dir("t", "b"), e.dir("t", "c"))
}

func TestGCRemovesFoldersOfDeletedTable(t *testing.T) {
	e := newGCEnv(t, Options{})
	gone := filepath.Join(e.root, "tables", "gone")
	writeTablet(t, filepath.Join(gone, "x1"), "a")
	orphan(t, filepath.Join(gone, "x2"))
	// A table still in etcd keeps its (empty) folder.
	e.putTablet("kept", "k1", "", "")
	if err := os.MkdirAll(filepath.Join(e.root, "tables", "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	age(t, filepath.Join(e.root, "tables"), time.Hour)

	res := e.sweep()
	want := []string{filepath.Join(gone, "x1"), filepath.Join(gone, "x2"), gone}
	if !slices.Equal(res.removed, want) {
		t.Fatalf("removed %v, want %v", res.removed, want)
	}
	wantExist(t, false, gone)
	wantExist(t, true, filepath.Join(e.root, "tables", "kept"))
}

func TestGCKeepsEverythingWhenAManifestIsUnreadable(t *testing.T) {
	e := newGCEnv(t, Options{})
	parent, left, right := e.dir("t", "parent"), e.dir("t", "left"), e.dir("t", "right")
	splitTablet(t, parent, left, right)
	e.putTablet("t", "left", "", "d")
	e.putTablet("t", "right", "d", "")
	compactAway(t, left, nil, []byte("d"))
	// The right child, which references the parent, has a damaged manifest:
	// nothing of the table may go, not even a plain orphan.
	newest, _, err := manifest.Newest(nil, right)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(right, newest.Name()), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	stray := e.dir("t", "stray")
	orphan(t, stray)
	age(t, filepath.Join(e.root, "tables"), time.Hour)

	res := e.sweep()
	if len(res.removed) != 0 || !slices.Equal(res.blocked, []string{"t"}) {
		t.Fatalf("removed %v, blocked %v; want nothing removed and t blocked", res.removed, res.blocked)
	}
	wantExist(t, true, parent, left, right, stray)
}

func TestGCKeepsParentOfSplitInProgress(t *testing.T) {
	// A server split the live tablet "parent" and etcd already names the
	// children, but a second split of "left" is in progress: its children
	// exist on disk (fresh) but not in etcd yet. Everything stays, and so
	// does the old parent they reference, even once "left" owns its files.
	e := newGCEnv(t, Options{})
	parent, left, right := e.dir("t", "parent"), e.dir("t", "left"), e.dir("t", "right")
	splitTablet(t, parent, left, right)
	e.putTablet("t", "left", "", "d")
	e.putTablet("t", "right", "d", "")
	compactAway(t, right, []byte("d"), nil)
	tb := openTablet(t, left, nil, []byte("d"))
	ll, lr := e.dir("t", "ll"), e.dir("t", "lr")
	if err := tb.Split(context.Background(), []byte("b"), ll, lr); err != nil {
		tb.Close()
		t.Fatal(err)
	}
	tb.Close()
	// The split commits: left leaves etcd; its old folder is unreferenced.
	e.deleteTablet("t", "left")
	age(t, parent, time.Hour)
	age(t, left, time.Hour)
	age(t, right, time.Hour)

	res := e.sweep()
	if !slices.Equal(res.removed, []string{left}) {
		t.Fatalf("removed %v, want just %s", res.removed, left)
	}
	wantExist(t, true, parent, right, ll, lr)
}

func TestGCStopsWhenNotLeader(t *testing.T) {
	e := newGCEnv(t, Options{})
	stray := e.dir("t", "stray")
	orphan(t, stray)
	age(t, stray, time.Hour)
	// A term whose election key is gone, as after losing the session.
	gone := &leadership{ctx: context.Background(), key: e.c.layout.ElectionPrefix() + "gone", rev: 1}
	if _, err := e.m.sweep(context.Background(), gone); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("sweep in a lost term: %v, want ErrNotLeader", err)
	}
	wantExist(t, true, stray)
	// A standby never sweeps.
	standby := e.c.startMaster(Options{StorageRoot: e.root, GCInterval: 20 * time.Millisecond, GCGrace: time.Millisecond})
	time.Sleep(300 * time.Millisecond)
	if standby.IsLeader() {
		t.Fatal("the standby leads")
	}
	wantExist(t, true, stray)
}

func TestGCLoopSweepsPeriodically(t *testing.T) {
	e := newGCEnv(t, Options{GCInterval: 50 * time.Millisecond, GCGrace: time.Minute})
	old, fresh := e.dir("t", "old"), e.dir("t", "fresh")
	orphan(t, old)
	orphan(t, fresh)
	age(t, old, time.Hour)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return !exists(t, old), "the old orphan is still there"
	})
	wantExist(t, true, fresh)
}

// TestGCOnAFailingDisk: the sweep goes through Options.FS; when the disk
// fails a removal or a stat, the folder stays (a stat it cannot make
// counts as fresh) and nothing else is touched; once the disk heals, the
// orphan goes.
func TestGCOnAFailingDisk(t *testing.T) {
	faulty := vfs.NewFaulty(nil)
	e := newGCEnv(t, Options{FS: faulty})
	e.putTablet("t", "live", "", "")
	writeTablet(t, e.dir("t", "live"), "a", "b")
	stray := e.dir("t", "stray")
	orphan(t, stray)
	age(t, filepath.Join(e.root, "tables"), time.Hour)

	faulty.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpRemove {
			return vfs.Failf("remove %s", name)
		}
		return nil
	})
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v though every removal failed", res.removed)
	}
	faulty.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpStat && strings.HasPrefix(name, stray) {
			return vfs.Failf("stat %s", name)
		}
		return nil
	})
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v though its age could not be read", res.removed)
	}
	wantExist(t, true, stray, e.dir("t", "live"))

	faulty.Set(nil)
	if res := e.sweep(); !slices.Equal(res.removed, []string{stray}) {
		t.Fatalf("after the disk healed: removed %v, want %s", res.removed, stray)
	}
	wantExist(t, true, e.dir("t", "live"))
}
