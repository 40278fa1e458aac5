// Package vfstest checks that a vfs.FS behaves as the engine needs: the
// same checks run against the local disk and every other backend, so a
// backend that differs from the local one in a way the engine notices
// fails here first.
package vfstest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// Run runs every check against fsys, using root (an existing, empty
// directory of fsys) for its files.
func Run(t *testing.T, fsys vfs.FS, root string) {
	t.Run("WriteSyncRead", func(t *testing.T) { writeSyncRead(t, fsys, root) })
	t.Run("CreateIsExclusive", func(t *testing.T) { createIsExclusive(t, fsys, root) })
	t.Run("Directories", func(t *testing.T) { directories(t, fsys, root) })
	t.Run("RenameReplaces", func(t *testing.T) { renameReplaces(t, fsys, root) })
	t.Run("Truncate", func(t *testing.T) { truncate(t, fsys, root) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, fsys vfs.FS, name string, chunks ...[]byte) {
	t.Helper()
	w, err := fsys.Create(name)
	must(t, err)
	for _, c := range chunks {
		_, err := w.Write(c)
		must(t, err)
		must(t, w.Sync())
	}
	must(t, w.Close())
}

func writeSyncRead(t *testing.T, fsys vfs.FS, root string) {
	dir := filepath.Join(root, "wsr")
	must(t, fsys.MkdirAll(dir))
	name := filepath.Join(dir, "000001.log")
	a, b, c := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 3), []byte("tail")
	w, err := fsys.Create(name)
	must(t, err)
	for _, p := range [][]byte{a, b} {
		_, err := w.Write(p)
		must(t, err)
		must(t, w.Sync())
	}
	_, err = w.Write(c)
	must(t, err)
	must(t, w.Close())
	want := slices.Concat(a, b, c)

	got, err := vfs.ReadFile(fsys, name)
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("ReadFile: %d bytes, want %d", len(got), len(want))
	}
	r, err := fsys.Open(name)
	must(t, err)
	defer r.Close()
	if r.Size() != int64(len(want)) {
		t.Fatalf("Size %d, want %d", r.Size(), len(want))
	}
	// A read across the boundaries of the writes.
	buf := make([]byte, 10)
	n, err := r.ReadAt(buf, 995)
	if n != 10 || err != nil || !bytes.Equal(buf, want[995:1005]) {
		t.Fatalf("ReadAt(995) = %d, %v, %q", n, err, buf[:n])
	}
	// Past the end: a short read with io.EOF.
	n, err = r.ReadAt(buf, int64(len(want))-2)
	if n != 2 || err != io.EOF {
		t.Fatalf("ReadAt at the end = %d, %v; want 2, EOF", n, err)
	}
	info, err := fsys.Stat(name)
	must(t, err)
	if info.Size != int64(len(want)) || info.IsDir() || info.Name != "000001.log" {
		t.Fatalf("Stat = %+v", info)
	}
	if _, err := fsys.Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing) = %v, want ErrNotExist", err)
	}
	// An empty file exists.
	writeFile(t, fsys, filepath.Join(dir, "empty"))
	if info, err := fsys.Stat(filepath.Join(dir, "empty")); err != nil || info.Size != 0 {
		t.Fatalf("Stat(empty) = %+v, %v", info, err)
	}
}

func createIsExclusive(t *testing.T, fsys vfs.FS, root string) {
	name := filepath.Join(root, "once")
	writeFile(t, fsys, name, []byte("x"))
	if _, err := fsys.Create(name); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create = %v, want ErrExist", err)
	}
	must(t, fsys.Remove(name))
	if err := fsys.Remove(name); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("second Remove = %v, want ErrNotExist", err)
	}
	writeFile(t, fsys, name, []byte("y")) // free again
}

func directories(t *testing.T, fsys vfs.FS, root string) {
	d := filepath.Join(root, "tables", "t1", "tab1")
	must(t, fsys.MkdirAll(d))
	if es, err := fsys.List(d); err != nil || len(es) != 0 {
		t.Fatalf("List(new dir) = %v, %v; want empty", es, err)
	}
	if info, err := fsys.Stat(d); err != nil || !info.IsDir() {
		t.Fatalf("Stat(dir) = %+v, %v", info, err)
	}
	writeFile(t, fsys, filepath.Join(d, "b.sst"), []byte("1"))
	writeFile(t, fsys, filepath.Join(d, "a.sst"), []byte("1"), []byte("2"))
	must(t, fsys.MkdirAll(filepath.Join(d, "log")))
	writeFile(t, fsys, filepath.Join(d, "log", "000001.log"), []byte("1"))
	es, err := fsys.List(d)
	must(t, err)
	want := []vfs.Entry{{Name: "a.sst"}, {Name: "b.sst"}, {Name: "log", IsDir: true}}
	if !slices.Equal(es, want) {
		t.Fatalf("List = %+v, want %+v", es, want)
	}
	if _, err := fsys.List(filepath.Join(root, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List(missing) = %v, want ErrNotExist", err)
	}
	if _, err := fsys.Stat(filepath.Join(root, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v, want ErrNotExist", err)
	}
	if err := fsys.Remove(d); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	// A sibling whose name extends this one's is not inside it.
	must(t, fsys.MkdirAll(d+"0"))
	writeFile(t, fsys, filepath.Join(d+"0", "keep"), []byte("k"))
	must(t, fsys.RemoveAll(d))
	if _, err := fsys.Stat(d); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after RemoveAll = %v, want ErrNotExist", err)
	}
	if _, err := fsys.Stat(filepath.Join(d+"0", "keep")); err != nil {
		t.Fatalf("RemoveAll removed a sibling: %v", err)
	}
	must(t, fsys.RemoveAll(d)) // missing: fine
	empty := filepath.Join(root, "emptydir")
	must(t, fsys.MkdirAll(empty))
	must(t, fsys.Remove(empty))
	must(t, fsys.SyncDir(root))
}

func renameReplaces(t *testing.T, fsys vfs.FS, root string) {
	dst := filepath.Join(root, "MANIFEST-3")
	writeFile(t, fsys, dst, []byte("old version"))
	tmp := dst + ".tmp"
	writeFile(t, fsys, tmp, []byte("new"))
	must(t, fsys.Rename(tmp, dst))
	got, err := vfs.ReadFile(fsys, dst)
	if err != nil || string(got) != "new" {
		t.Fatalf("after Rename: %q, %v", got, err)
	}
	if _, err := fsys.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the renamed file is still there: %v", err)
	}
}

func truncate(t *testing.T, fsys vfs.FS, root string) {
	name := filepath.Join(root, "torn.log")
	writeFile(t, fsys, name, []byte("complete"), []byte("torn"))
	must(t, fsys.Truncate(name, 8))
	got, err := vfs.ReadFile(fsys, name)
	if err != nil || string(got) != "complete" {
		t.Fatalf("after Truncate: %q, %v", got, err)
	}
}
