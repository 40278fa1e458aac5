package vfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// TestLocalReuseOverwritesInPlace: Reuse moves the file to its new name
// and overwrites it from offset 0, keeping the bytes it does not
// overwrite; the old name is gone.
func TestLocalReuseOverwritesInPlace(t *testing.T) {
	for name, fsys := range map[string]vfs.FS{"local": vfs.Default, "faulty": vfs.NewFaulty(nil)} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			old, neu := filepath.Join(dir, "old"), filepath.Join(dir, "new")
			if err := os.WriteFile(old, []byte("0123456789"), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := fsys.(vfs.Reuser).Reuse(old, neu)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte("abc")); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(neu); err != nil || string(b) != "abc3456789" {
				t.Fatalf("reused file holds %q, %v; want abc3456789", b, err)
			}
			if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("old name still there: %v", err)
			}
		})
	}
}

// TestLocalReuseNeverReplaces: like Create, Reuse fails on an existing
// new name and leaves both files as they were; a missing old name fails
// as not applied.
func TestLocalReuseNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	old, neu := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	for _, p := range []string{old, neu} {
		if err := os.WriteFile(p, []byte(filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := vfs.Default.(vfs.Reuser).Reuse(old, neu); !errors.Is(err, fs.ErrExist) || !errors.Is(err, vfs.ErrNotApplied) {
		t.Fatalf("Reuse onto an existing name: %v; want fs.ErrExist, not applied", err)
	}
	for _, p := range []string{old, neu} {
		if b, err := os.ReadFile(p); err != nil || string(b) != filepath.Base(p) {
			t.Fatalf("%s holds %q, %v after the failed Reuse", p, b, err)
		}
	}
	if _, err := vfs.Default.(vfs.Reuser).Reuse(filepath.Join(dir, "missing"), filepath.Join(dir, "x")); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, vfs.ErrNotApplied) {
		t.Fatalf("Reuse of a missing file: %v; want fs.ErrNotExist, not applied", err)
	}
}

// TestFaultyReuseIsACreation: Faulty fails a Reuse as the creation of the
// new name, before (nothing renamed) or after (renamed, the caller told
// it failed).
func TestFaultyReuseIsACreation(t *testing.T) {
	dir := t.TempDir()
	old, neu := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	ffs := vfs.NewFaulty(nil)
	ffs.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpCreate && name == neu {
			return vfs.Failf("no")
		}
		return nil
	})
	if _, err := ffs.Reuse(old, neu); !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, vfs.ErrNotApplied) {
		t.Fatalf("injected Reuse: %v", err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a Reuse failed before renamed the file: %v", err)
	}
	ffs.Set(func(op vfs.Op, name string) error {
		if op == vfs.OpCreate && name == neu {
			return &vfs.AfterApply{}
		}
		return nil
	})
	if _, err := ffs.Reuse(old, neu); !errors.Is(err, vfs.ErrInjected) || errors.Is(err, vfs.ErrNotApplied) {
		t.Fatalf("Reuse failed after: %v", err)
	}
	if _, err := os.Stat(neu); err != nil {
		t.Fatalf("a Reuse failed after did not rename the file: %v", err)
	}
	// Over an FS that cannot reuse files, Faulty cannot either.
	if _, err := vfs.NewFaulty(plainFS{vfs.Default}).Reuse(neu, old); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Reuse over a plain FS: %v; want errors.ErrUnsupported", err)
	}
}

// plainFS hides the Reuse of the FS it wraps.
type plainFS struct{ vfs.FS }
