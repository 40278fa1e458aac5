package s3fs

import (
	"context"
	"errors"
	"io/fs"
	"testing"
)

// TestWholeFilesOneRequestEach: WriteWhole is one PUT, ReadWhole one GET
// (a missing name fs.ErrNotExist), RemoveWhole one DELETE for one name and
// one multi-object delete for several, and the counter tells each kind
// apart (a LIST, a COPY).
func TestWholeFilesOneRequestEach(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, want Requests, fn func()) {
		t.Helper()
		before := f.Requests()
		fn()
		if got := f.Requests().Sub(before); got != want {
			t.Fatalf("%s: requests %+v, want %+v", what, got, want)
		}
	}
	step("WriteWhole x3", Requests{Put: 3}, func() {
		for _, n := range []string{"a", "b", "c"} {
			if err := f.WriteWhole("/storage/d/"+n, []byte("x"+n)); err != nil {
				t.Fatal(err)
			}
		}
	})
	step("ReadWhole", Requests{Get: 1}, func() {
		b, err := f.ReadWhole("/storage/d/b")
		if err != nil || string(b) != "xb" {
			t.Fatalf("ReadWhole = %q, %v", b, err)
		}
	})
	step("ReadWhole of a missing name", Requests{Get: 1}, func() {
		if _, err := f.ReadWhole("/storage/d/z"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadWhole of a missing name: %v, want fs.ErrNotExist", err)
		}
	})
	step("List", Requests{List: 1}, func() {
		es, err := f.List("/storage/d")
		if err != nil || len(es) != 3 {
			t.Fatalf("List = %v, %v", es, err)
		}
	})
	step("RemoveWhole of one", Requests{Delete: 1}, func() {
		if err := f.RemoveWhole([]string{"/storage/d/a"}); err != nil {
			t.Fatal(err)
		}
	})
	step("RemoveWhole of several", Requests{Delete: 1}, func() {
		if err := f.RemoveWhole([]string{"/storage/d/b", "/storage/d/c", "/storage/d/gone"}); err != nil {
			t.Fatal(err)
		}
	})
	if es, err := f.List("/storage/d"); err == nil {
		t.Fatalf("after RemoveWhole the folder lists %v", es)
	}
}

// TestMkdirAllWritesEachMarkerOnce: the engine calls MkdirAll before
// every SSTable it writes; the markers this FS wrote are not written
// again, and those RemoveAll removed are.
func TestMkdirAllWritesEachMarkerOnce(t *testing.T) {
	srv := startStore(t)
	f, err := Open(context.Background(), config(t, srv, "mkdir"))
	if err != nil {
		t.Fatal(err)
	}
	mkdir := func(dir string, puts int64) {
		t.Helper()
		before := f.Requests()
		if err := f.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		if got := f.Requests().Sub(before); got != (Requests{Put: puts}) {
			t.Fatalf("MkdirAll(%s) made %+v requests, want %d PUTs", dir, got, puts)
		}
		if info, err := f.Stat(dir); err != nil || !info.IsDir() {
			t.Fatalf("after MkdirAll(%s): Stat = %+v, %v", dir, info, err)
		}
	}
	mkdir("/storage/a/b/c", 3)
	mkdir("/storage/a/b/c", 0)
	mkdir("/storage/a/b", 0)
	mkdir("/storage/a/b/d", 1)
	if err := f.RemoveAll("/storage/a/b"); err != nil {
		t.Fatal(err)
	}
	mkdir("/storage/a/b/c", 2)
	if err := f.Remove("/storage/a/b/c"); err != nil {
		t.Fatal(err)
	}
	mkdir("/storage/a/b/c", 1)
}
