package master

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// TestGCKeepsSplitParentBehindALaggingListing: the store's listing does
// not show the split children's manifests yet (an object store's LIST may
// lag behind a PUT). The sweep must not take "no manifest listed" for "it
// references nothing" and delete the parent whose files the children
// read; it keeps the table's folders until the listing caught up. Before,
// it deleted the parent.
func TestGCKeepsSplitParentBehindALaggingListing(t *testing.T) {
	e, faulty := newGCEnvOn(t)
	parent, left, right := splitInEtcd(t, e)

	// The children's manifests were just written: rewrite them through
	// the lagging listing.
	catchUp := faulty.ListLag(func(p string) bool { return strings.HasPrefix(filepath.Base(p), "MANIFEST") })
	for _, dir := range []string{left, right} {
		ms, err := filepath.Glob(filepath.Join(dir, "MANIFEST*"))
		if err != nil || len(ms) == 0 {
			t.Fatalf("manifests of %s: %v %v", dir, ms, err)
		}
		for _, m := range ms {
			rewriteFileThrough(t, faulty, m)
		}
	}
	age(t, filepath.Join(e.root, "tables"), time.Hour)

	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v while the children's manifests were not listed", res.removed)
	}
	wantExist(t, true, parent, left, right)
	catchUp()
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v while both children reference the parent", res.removed)
	}
	wantExist(t, true, parent, left, right)
}

// TestGCKeepsSplitParentBehindALaggingFolderListing: the listing does not
// show the split children's folders at all yet. The sweep reads every live
// tablet's folder by name, and keeps the parent they reference. Before,
// it saw only the parent's folder and deleted it.
func TestGCKeepsSplitParentBehindALaggingFolderListing(t *testing.T) {
	e, faulty := newGCEnvOn(t)
	parent, left, right := splitInEtcd(t, e)

	catchUp := faulty.ListLag(nil)
	for _, dir := range []string{left, right} {
		rewriteThrough(t, faulty, dir)
	}
	age(t, filepath.Join(e.root, "tables"), time.Hour)
	if es, _ := faulty.List(filepath.Dir(parent)); len(es) != 1 {
		t.Fatalf("the listing shows %v, want the parent only", es)
	}
	if res := e.sweep(); len(res.removed) != 0 {
		t.Fatalf("removed %v while the children's folders were not listed", res.removed)
	}
	wantExist(t, true, parent, left, right)
	catchUp()
}

// newGCEnvOn is a GC environment whose master sweeps through a Faulty.
func newGCEnvOn(t *testing.T) (*gcEnv, *vfs.Faulty) {
	faulty := vfs.NewFaulty(nil)
	return newGCEnv(t, Options{FS: faulty}), faulty
}

// splitInEtcd splits a tablet of table t into left and right children,
// which etcd holds in its place.
func splitInEtcd(t *testing.T, e *gcEnv) (parent, left, right string) {
	parent, left, right = e.dir("t", "parent"), e.dir("t", "left"), e.dir("t", "right")
	splitTablet(t, parent, left, right)
	e.putTablet("t", "left", "", "d")
	e.putTablet("t", "right", "d", "")
	return parent, left, right
}

// rewriteThrough makes dir again, file by file, through fsys: as if it had
// just been written there.
func rewriteThrough(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files[p], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for p, b := range files {
		writeThrough(t, fsys, p, b)
	}
}

// rewriteFileThrough writes the file at p again through fsys.
func rewriteFileThrough(t *testing.T, fsys vfs.FS, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	writeThrough(t, fsys, p, b)
}

func writeThrough(t *testing.T, fsys vfs.FS, p string, b []byte) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	w, err := fsys.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
