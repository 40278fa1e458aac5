//go:build linux

package vfs

import (
	"path/filepath"
	"testing"
)

// A local file can start the write-out of what was written (the hint the
// commit log gives every half MiB), also one reused under a new name.
func TestLocalStartsWriteback(t *testing.T) {
	dir := t.TempDir()
	w, err := Default.Create(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if !StartWriteback(w, 0, 1<<20) {
		t.Fatal("a local file did not start its write-out")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Local{}.Reuse(filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if err != nil {
		t.Skipf("no reuse here: %v", err)
	}
	defer r.Close()
	if _, err := r.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if !StartWriteback(r, 0, 4096) {
		t.Fatal("a reused local file did not start its write-out")
	}
}
