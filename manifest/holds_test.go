package manifest

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestHoldIDs(t *testing.T) {
	for _, ok := range []string{"s", "snap-1", "a.b_c", "_x", "0"} {
		if err := ValidateHoldID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "-a", ".a", "a/b", "a b", string(make([]byte, 129))} {
		if err := ValidateHoldID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestHoldReadsAsAFolderReferencingItsTabletsFiles: a hold names the
// tablet's own files and its references to a parent's, all outside the
// hold's folder, so References (the GC's reading) and HeldFiles list them
// where they lie; a second save of one id is refused; a rebased copy names
// the same files.
func TestHoldReadsAsAFolderReferencingItsTabletsFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "child")
	st := State{
		Files: []FileRef{
			{Family: "cf", Path: "cf/000002.sst", FileNum: 2, Size: 10, MinSeq: 1, MaxSeq: 2},
			{Family: "cf", Path: "../parent/cf/000001.sst", FileNum: 1, Size: 10, MinSeq: 1, MaxSeq: 1},
		},
		Log: "0000000000000001-1", ReplayPoint: 7, LastSeq: 2, NextFileNum: 3,
	}
	if err := SaveHold(nil, dir, "s1", st); err != nil {
		t.Fatal(err)
	}
	if err := SaveHold(nil, dir, "s1", st); err == nil {
		t.Fatal("a second save of hold s1 was accepted")
	}
	want := []string{filepath.Join(dir, "cf", "000002.sst"), filepath.Join(root, "parent", "cf", "000001.sst")}
	got, err := HeldFiles(nil, dir, "s1")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("HeldFiles = %v, %v; want %v", got, err, want)
	}
	refs, err := References(nil, HoldDir(dir, "s1"))
	if err != nil || !slices.Equal(refs.Files, want) || refs.Log != "" {
		t.Fatalf("References of the hold = %+v, %v; want files %v and no log", refs, err, want)
	}
	h, err := LoadHold(nil, dir, "s1")
	if err != nil || h.ReplayPoint != 0 || h.LastSeq != 2 {
		t.Fatalf("LoadHold = %+v, %v", h, err)
	}
	clone := filepath.Join(root, "other-table", "clone")
	c, err := Rebase(h, HoldDir(dir, "s1"), clone)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range c.Files {
		if p := filepath.Join(clone, filepath.FromSlash(f.Path)); p != want[i] {
			t.Fatalf("rebased file %d is %s, want %s", i, p, want[i])
		}
	}
	if ids, err := ListHolds(nil, dir); err != nil || !slices.Equal(ids, []string{"s1"}) {
		t.Fatalf("ListHolds = %v, %v", ids, err)
	}
	if err := RemoveHold(nil, dir, "s1"); err != nil {
		t.Fatal(err)
	}
	if held, err := HasHolds(nil, dir); err != nil || held {
		t.Fatalf("HasHolds after removal = %v, %v", held, err)
	}
}
