package storepath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// No name can make a removal reach the root, the tables folder or
// anything outside it: `tabula table delete ..` once removed the whole
// storage root.
func TestNoNameReachesOutsideItsFolder(t *testing.T) {
	root := t.TempDir()
	keep := filepath.Join(root, "tables", "keep", "t1")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", ".", "..", "...", ".hidden", "-x", "a/b", "../x", "a\\b", "tables/..", "x\x00"} {
		err := RemoveTable(nil, root, name)
		if name == "..." && err == nil {
			t.Errorf("RemoveTable(%q) accepted a name starting with a dot", name)
		}
		if err == nil && name != "..." {
			t.Errorf("RemoveTable(%q) succeeded", name)
		}
		if err != nil && !errors.Is(err, cell.ErrInvalid) {
			t.Errorf("RemoveTable(%q) = %v, want an invalid-argument error", name, err)
		}
		if err := RemoveTablet(nil, root, "keep", name); err == nil {
			t.Errorf("RemoveTablet(keep, %q) succeeded", name)
		}
	}
	for _, dir := range []string{root, filepath.Join(root, "tables"), filepath.Join(root, "tables", "keep"), filepath.Join(root, "tables", "keep", ".."), filepath.Dir(root), "/"} {
		if err := RemoveTabletDir(nil, root, dir); err == nil {
			t.Errorf("RemoveTabletDir(%s) succeeded", dir)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a refused removal removed something: %v", err)
	}
	if err := RemoveTabletDir(nil, root, keep); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); !os.IsNotExist(err) {
		t.Fatalf("tablet folder still there: %v", err)
	}
}

func TestPaths(t *testing.T) {
	got, err := Tablet("/srv/tabula", "users", "a1b2")
	if err != nil || got != "/srv/tabula/tables/users/a1b2" {
		t.Fatalf("Tablet = %q, %v", got, err)
	}
	if _, err := Table("", "users"); err == nil {
		t.Fatal("an empty root was accepted")
	}
}

// FuzzNames: whatever a table name and tablet id are, a path is either
// refused or exactly one table or tablet folder inside <root>/tables.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"users", ".", "..", "a/b", "../x", "", "t_1.x-y", "\x00"} {
		f.Add(s, "a1b2")
		f.Add("users", s)
	}
	f.Fuzz(func(t *testing.T, table, id string) {
		root := "/srv/tabula"
		tables := filepath.Join(root, TablesFolder) + string(filepath.Separator)
		if dir, err := Table(root, table); err == nil {
			rel, _ := filepath.Rel(tables, dir)
			if !strings.HasPrefix(dir, tables) || rel != table || strings.ContainsRune(rel, filepath.Separator) || rel == "." || rel == ".." {
				t.Fatalf("Table(%q) = %q", table, dir)
			}
		}
		if dir, err := Tablet(root, table, id); err == nil {
			if filepath.Dir(filepath.Dir(dir))+string(filepath.Separator) != tables || filepath.Base(dir) != id || filepath.Base(filepath.Dir(dir)) != table {
				t.Fatalf("Tablet(%q, %q) = %q", table, id, dir)
			}
		}
	})
}
