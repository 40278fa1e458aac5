package vfs_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// TestFaultyWholeFiles: over the local disk, Faulty's whole files are
// written whole (a temporary name renamed), read and removed; a write
// failed before is not applied, one failed after is, and a late one lands
// on Release.
func TestFaultyWholeFiles(t *testing.T) {
	dir := t.TempDir()
	f := vfs.NewFaulty(vfs.Default)
	w := f.WholeFiles().(vfs.WholeFiles)
	late := &vfs.Late{}
	f.Set(func(op vfs.Op, name string) error {
		switch filepath.Base(name) {
		case "before":
			return vfs.Failf("refused")
		case "after":
			return &vfs.AfterApply{}
		case "late":
			return late
		}
		return nil
	})
	for _, n := range []string{"ok", "before", "after", "late"} {
		err := w.WriteWhole(filepath.Join(dir, n), []byte(n))
		if (err == nil) != (n == "ok") || errors.Is(err, vfs.ErrNotApplied) != (n == "before") {
			t.Fatalf("WriteWhole(%s) = %v", n, err)
		}
	}
	f.Set(nil)
	read := func(n string) string {
		b, err := w.ReadWhole(filepath.Join(dir, n))
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	if read("ok") != "ok" || read("after") != "after" || !strings.Contains(read("late"), "no such file") {
		t.Fatalf("after the writes: ok %q, after %q, late %q", read("ok"), read("after"), read("late"))
	}
	if err := late.Release(); err != nil || read("late") != "late" {
		t.Fatalf("the late write: %v, reads %q", err, read("late"))
	}
	if err := w.RemoveWhole([]string{filepath.Join(dir, "ok"), filepath.Join(dir, "after"), filepath.Join(dir, "gone")}); err != nil {
		t.Fatal(err)
	}
	if es, _ := vfs.Default.List(dir); len(es) != 1 || es[0].Name != "late" {
		t.Fatalf("after the removal the folder holds %v, want late alone (before was never written)", es)
	}
}
