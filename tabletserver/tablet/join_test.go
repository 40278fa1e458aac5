package tablet

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// splitPair writes rows row000..row199 into a tablet in root/parent,
// splits it at row100 and opens both children (the usual shape of two
// adjacent tablets: each still references its parent's files). The right
// child then takes more writes than the left, so its sequence numbers run
// ahead; the last writes stay in the memtables.
func splitPair(t *testing.T, root string, fsys vfs.FS) (left, right *Tablet) {
	t.Helper()
	opts := testOptions(filepath.Join(root, "parent"))
	opts.FS = fsys
	tb := openTablet(t, opts)
	for i := 0; i < 200; i++ {
		apply(t, tb, fmt.Sprintf("row%03d", i), set("a", "q", 1, fmt.Sprint(i)), set("b", "z", 2, "b"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Split(bg, []byte("row100"), filepath.Join(root, "left"), filepath.Join(root, "right")); err != nil {
		t.Fatal(err)
	}
	lo, ro := testOptions(filepath.Join(root, "left")), testOptions(filepath.Join(root, "right"))
	lo.FS, ro.FS = fsys, fsys
	left, right = openTablet(t, lo), openTablet(t, ro)
	for i := 0; i < 300; i++ {
		apply(t, right, fmt.Sprintf("row%03d", 100+i%100), set("a", "n", int64(i), "r"))
	}
	if err := right.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, left, "row007", delRow())                           // a tombstone in the memtable
	apply(t, left, "row050", set("a", "q", 1, "left-overwrite")) // same cell, newer write
	apply(t, right, "row150", set("a", "q", 1, "right-memtable"))
	return left, right
}

func TestMergeReadsTheUnionReopensAndSplitsAgain(t *testing.T) {
	root := t.TempDir()
	left, right := splitPair(t, root, vfs.Default)
	want := scan(t, left, ReadOptions{}) + " " + scan(t, right, ReadOptions{})
	dir := filepath.Join(root, "merged")
	if err := Merge(bg, left, right, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := left.ReadRow(bg, []byte("row001"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("left parent after merge: %v", err)
	}
	refs, err := manifest.Referenced(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every reference names a file where it lies (the grandparent's files
	// directly, not through the children's folders).
	for _, r := range refs {
		if d := filepath.Base(filepath.Dir(filepath.Dir(r))); d != "parent" && d != "left" && d != "right" {
			t.Fatalf("reference %s is not in a parent's or the grandparent's folder", r)
		}
	}
	m := openTablet(t, testOptions(dir))
	if s, e := m.Range(); s != nil || e != nil {
		t.Fatalf("merged range [%q, %q)", s, e)
	}
	if got := scan(t, m, ReadOptions{}); got != want {
		t.Fatalf("merged tablet reads\n%s\nwant the union\n%s", got, want)
	}
	// A write after the merge supersedes a cell of either parent with the
	// same coordinates: its sequence number is above both parents'.
	apply(t, m, "row150", set("a", "q", 1, "after-merge"))
	apply(t, m, "row020", set("a", "q", 1, "after-merge"))
	for _, row := range []string{"row150", "row020"} {
		if got := readRow(t, m, row, nil); !strings.Contains(got, "a:q@1=after-merge") {
			t.Fatalf("%s after merge reads %s", row, got)
		}
	}
	want = scan(t, m, ReadOptions{})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = openTablet(t, testOptions(dir))
	if got := scan(t, m, ReadOptions{}); got != want {
		t.Fatalf("reopened merged tablet reads\n%s\nwant\n%s", got, want)
	}
	// Split the merged tablet again while it still references files
	// through two levels (the grandparent's and the right child's).
	if err := m.Split(bg, []byte("row120"), filepath.Join(root, "l2"), filepath.Join(root, "r2")); err != nil {
		t.Fatal(err)
	}
	l2, r2 := openTablet(t, testOptions(filepath.Join(root, "l2"))), openTablet(t, testOptions(filepath.Join(root, "r2")))
	if got := scan(t, l2, ReadOptions{}) + " " + scan(t, r2, ReadOptions{}); got != want {
		t.Fatalf("children of the merged tablet read\n%s\nwant\n%s", got, want)
	}
	// Their compactions rewrite every reference into their own files.
	for _, c := range []*Tablet{l2, r2} {
		if err := c.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if refs, err := manifest.Referenced(nil, c.dir); err != nil || len(refs) != 0 {
			t.Fatalf("references after a major compaction: %v, %v", refs, err)
		}
	}
	if got := scan(t, l2, ReadOptions{}) + " " + scan(t, r2, ReadOptions{}); got != want {
		t.Fatalf("after compaction\n%s\nwant\n%s", got, want)
	}
}

func TestMergeRefusesTabletsThatAreNotAdjacent(t *testing.T) {
	root := t.TempDir()
	a := openTablet(t, withRange(testOptions(filepath.Join(root, "a")), "", "m"))
	b := openTablet(t, withRange(testOptions(filepath.Join(root, "b")), "n", ""))
	if err := Merge(bg, a, b, filepath.Join(root, "ab")); err == nil {
		t.Fatal("merged [,m) and [n,)")
	}
	if err := Merge(bg, b, a, filepath.Join(root, "ba")); err == nil {
		t.Fatal("merged right before left")
	}
	apply(t, a, "a", set("a", "q", 1, "still open"))
}

func withRange(o Options, start, end string) Options {
	if start != "" {
		o.Start = []byte(start)
	}
	if end != "" {
		o.End = []byte(end)
	}
	return o
}

// A merge cut short at any file operation leaves both parents whole: they
// reopen with every row they had, and the merged folder holds no manifest
// (the tablet server then removes it and serves the parents again).
func TestMergeCutShortLeavesTheParentsWhole(t *testing.T) {
	for _, step := range []struct {
		op   vfs.Op
		name string
	}{
		{vfs.OpCreate, "sst"},          // flushing a parent
		{vfs.OpMkdir, "merged"},        // creating the merged folder
		{vfs.OpCreate, "MANIFEST"},     // writing the merged manifest
		{vfs.OpRename, "merged"},       // renaming it into place
		{vfs.OpSyncDir, "merged"},      // making the rename durable
		{vfs.OpCreate, "no-such-file"}, // no fault: the merge happens
	} {
		t.Run(string(step.op)+"-"+step.name, func(t *testing.T) {
			root := t.TempDir()
			fsys := vfs.NewFaulty(vfs.Default)
			left, right := splitPair(t, root, fsys)
			want := scan(t, left, ReadOptions{}) + " " + scan(t, right, ReadOptions{})
			dir := filepath.Join(root, "merged")
			fsys.Set(func(op vfs.Op, name string) error {
				rel, _ := filepath.Rel(root, name)
				if op == step.op && strings.Contains(rel, step.name) {
					return vfs.Failf("injected %s of %s", op, name)
				}
				return nil
			})
			err := Merge(bg, left, right, dir)
			fsys.Set(nil)
			merged := err == nil
			if (step.name == "no-such-file") != merged {
				t.Fatalf("merge with the fault %v: %v", step, err)
			}
			if !left.Closed() || !right.Closed() {
				t.Fatal("a parent is still open after Merge returned")
			}
			if _, found, lerr := manifest.Load(vfs.Default, dir); lerr != nil || found != merged {
				t.Fatalf("merge returned %v; manifest in %s: found %v, %v", err, dir, found, lerr)
			}
			// Abandon the merge (as a failed etcd commit does): the
			// parents reopen at a newer epoch with every row.
			var got []string
			for _, d := range []string{"left", "right"} {
				o := testOptions(filepath.Join(root, d))
				o.Epoch = 5
				p := openTablet(t, o)
				got = append(got, scan(t, p, ReadOptions{}))
				p.Close()
			}
			if strings.Join(got, " ") != want {
				t.Fatalf("parents after an abandoned merge read\n%s\nwant\n%s", strings.Join(got, " "), want)
			}
			if merged {
				m := openTablet(t, testOptions(dir))
				if got := scan(t, m, ReadOptions{}); got != want {
					t.Fatalf("merged tablet reads\n%s\nwant\n%s", got, want)
				}
			}
		})
	}
}
