package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestIsOwnPath(t *testing.T) {
	for _, c := range []struct {
		path string
		own  bool
	}{
		{"cf1/000001.sst", true},
		{"./cf1/../cf2/000002.sst", true},
		{"..", false},
		{"../parent/cf1/000001.sst", false},
		{"cf1/../../parent/000001.sst", false},
		{"/abs/000001.sst", false},
	} {
		if got := IsOwnPath(c.path); got != c.own {
			t.Errorf("IsOwnPath(%q) = %v, want %v", c.path, got, c.own)
		}
	}
}

// TestReferencesOfAFolderWithoutManifestIsNoTablet: a folder whose
// manifest is not listed is never "references nothing" (the GC would
// delete a parent a child still needs).
func TestReferencesOfAFolderWithoutManifestIsNoTablet(t *testing.T) {
	r, err := References(nil, t.TempDir())
	if !errors.Is(err, ErrNoTablet) || r.Files != nil || r.Log != "" {
		t.Fatalf("References of an empty folder = %+v, %v, want ErrNoTablet", r, err)
	}
}

func TestReferencesListsOnlyFilesOutsideTheFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "child")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := State{NextFileNum: 3, Log: "ts-1", Files: []FileRef{
		{Family: "cf1", Path: "cf1/000002.sst", FileNum: 2, MinSeq: 5, MaxSeq: 6},
		{Family: "cf1", Path: "../parent/cf1/000001.sst", FileNum: 1, MinSeq: 1, MaxSeq: 4},
	}}
	if err := Save(nil, dir, st); err != nil {
		t.Fatal(err)
	}
	r, err := References(nil, dir)
	want := []string{filepath.Join(filepath.Dir(dir), "parent", "cf1", "000001.sst")}
	if err != nil || !slices.Equal(r.Files, want) || r.Log != "ts-1" {
		t.Fatalf("References = %+v, %v, want files %v and log ts-1", r, err, want)
	}
	if files, err := Referenced(nil, dir); err != nil || !slices.Equal(files, want) {
		t.Fatalf("Referenced = %v, %v, want %v", files, err, want)
	}
}
