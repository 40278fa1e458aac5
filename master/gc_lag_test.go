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
	faulty := vfs.NewFaulty(nil)
	e := newGCEnv(t, Options{FS: faulty})
	parent, left, right := e.dir("t", "parent"), e.dir("t", "left"), e.dir("t", "right")
	splitTablet(t, parent, left, right)
	e.putTablet("t", "left", "", "d")
	e.putTablet("t", "right", "d", "")

	// The children's manifests were just written: rewrite them through
	// the lagging listing.
	catchUp := faulty.ListLag(func(p string) bool { return strings.HasPrefix(filepath.Base(p), "MANIFEST") })
	for _, dir := range []string{left, right} {
		ms, err := filepath.Glob(filepath.Join(dir, "MANIFEST*"))
		if err != nil || len(ms) == 0 {
			t.Fatalf("manifests of %s: %v %v", dir, ms, err)
		}
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(m); err != nil {
				t.Fatal(err)
			}
			w, err := faulty.Create(m)
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
