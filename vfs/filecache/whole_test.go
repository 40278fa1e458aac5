package filecache

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// whole is an FS with whole-file calls, counting them.
type whole struct {
	vfs.FS
	writes, reads, removals int
}

func (w *whole) WriteWhole(name string, b []byte) error {
	w.writes++
	return os.WriteFile(name, b, 0o644)
}
func (w *whole) ReadWhole(name string) ([]byte, error) { w.reads++; return os.ReadFile(name) }
func (w *whole) RemoveWhole(names []string) error {
	w.removals++
	for _, n := range names {
		_ = os.Remove(n)
	}
	return nil
}

// TestWholeFilesPassThrough: the cache over an FS with whole files passes
// them on (a manifest save under the cache stays one request), and over
// one without them does not claim them (callers fall back).
func TestWholeFilesPassThrough(t *testing.T) {
	inner := &whole{FS: vfs.Default}
	c, err := New(inner, Options{Dir: t.TempDir(), MaxBytes: 1 << 20, Cacheable: sst})
	if err != nil {
		t.Fatal(err)
	}
	w, ok := c.WithWholeFiles().(vfs.WholeFiles)
	if !ok {
		t.Fatal("the cache over an FS with whole files hides them")
	}
	name := filepath.Join(t.TempDir(), "MANIFEST-1-v1")
	if err := w.WriteWhole(name, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if b, err := w.ReadWhole(name); err != nil || string(b) != "m" {
		t.Fatalf("ReadWhole = %q, %v", b, err)
	}
	if err := w.RemoveWhole([]string{name}); err != nil {
		t.Fatal(err)
	}
	if inner.writes != 1 || inner.reads != 1 || inner.removals != 1 {
		t.Fatalf("the inner FS saw %d writes, %d reads, %d removals; want one each", inner.writes, inner.reads, inner.removals)
	}
	plain, _, _ := newCache(t, 1<<20)
	if _, ok := plain.WithWholeFiles().(vfs.WholeFiles); ok {
		t.Fatal("the cache over the local disk claims whole files")
	}
}
