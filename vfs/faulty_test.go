package vfs_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// TestFaultyWays fails every mutating call each way Faulty knows and
// checks what the caller is told and what the disk holds: before (not
// applied, and the error says so), after (applied, error) and late
// (error at once, applied at Release).
func TestFaultyWays(t *testing.T) {
	type step struct {
		op      vfs.Op
		setup   func(t *testing.T, fsys vfs.FS, dir string)
		call    func(fsys vfs.FS, dir string) error
		applied func(dir string) bool // on the inner disk
	}
	exists := func(name string) func(dir string) bool {
		return func(dir string) bool {
			_, err := vfs.Default.Stat(filepath.Join(dir, name))
			return err == nil
		}
	}
	gone := func(name string) func(dir string) bool {
		e := exists(name)
		return func(dir string) bool { return !e(dir) }
	}
	content := func(name, want string) func(dir string) bool {
		return func(dir string) bool {
			b, err := vfs.ReadFile(vfs.Default, filepath.Join(dir, name))
			return err == nil && string(b) == want
		}
	}
	put := func(name, data string) func(t *testing.T, fsys vfs.FS, dir string) {
		return func(t *testing.T, _ vfs.FS, dir string) {
			t.Helper()
			writeFile(t, vfs.Default, filepath.Join(dir, name), data)
		}
	}
	steps := []step{
		{op: vfs.OpCreate,
			call: func(fsys vfs.FS, dir string) error {
				w, err := fsys.Create(filepath.Join(dir, "a"))
				if err == nil {
					w.Close()
				}
				return err
			},
			applied: exists("a")},
		{op: vfs.OpWrite,
			call: func(fsys vfs.FS, dir string) error {
				w, err := fsys.Create(filepath.Join(dir, "a"))
				if err != nil {
					return err
				}
				defer w.Close()
				_, err = w.Write([]byte("hello"))
				if err == nil {
					err = w.Sync()
				}
				return err
			},
			applied: content("a", "hello")},
		{op: vfs.OpRename, setup: put("a.tmp", "x"),
			call: func(fsys vfs.FS, dir string) error {
				return fsys.Rename(filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a"))
			},
			applied: content("a", "x")},
		{op: vfs.OpRemove, setup: put("a", "x"),
			call:    func(fsys vfs.FS, dir string) error { return fsys.Remove(filepath.Join(dir, "a")) },
			applied: gone("a")},
		{op: vfs.OpRemove, setup: put("d/a", "x"),
			call:    func(fsys vfs.FS, dir string) error { return fsys.RemoveAll(filepath.Join(dir, "d")) },
			applied: gone("d")},
		{op: vfs.OpTruncate, setup: put("a", "hello"),
			call:    func(fsys vfs.FS, dir string) error { return fsys.Truncate(filepath.Join(dir, "a"), 2) },
			applied: content("a", "he")},
		{op: vfs.OpMkdir,
			call:    func(fsys vfs.FS, dir string) error { return fsys.MkdirAll(filepath.Join(dir, "d", "e")) },
			applied: exists("d/e")},
	}
	for _, s := range steps {
		for _, way := range []string{"before", "after", "late"} {
			t.Run(string(s.op)+"/"+way, func(t *testing.T) {
				dir := t.TempDir()
				ffs := vfs.NewFaulty(vfs.Default)
				if s.setup != nil {
					s.setup(t, ffs, dir)
				}
				late := &vfs.Late{}
				ffs.Set(func(op vfs.Op, _ string) error {
					if op != s.op {
						return nil
					}
					switch way {
					case "after":
						return &vfs.AfterApply{}
					case "late":
						return late
					}
					return vfs.Failf("%s refused", op)
				})
				err := s.call(ffs, dir)
				ffs.Set(nil)
				if !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("%s = %v, want an injected error", s.op, err)
				}
				if got, want := errors.Is(err, vfs.ErrNotApplied), way == "before"; got != want {
					t.Fatalf("%s = %v: ErrNotApplied %v, want %v", s.op, err, got, want)
				}
				if got, want := errors.Is(err, context.DeadlineExceeded), way == "late"; got != want {
					t.Fatalf("%s = %v: DeadlineExceeded %v, want %v", s.op, err, got, want)
				}
				if got, want := s.applied(dir), way == "after"; got != want {
					t.Fatalf("applied when the call returned: %v, want %v", got, want)
				}
				if err := late.Release(); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if got, want := s.applied(dir), way != "before"; got != want {
					t.Fatalf("applied after Release: %v, want %v", got, want)
				}
			})
		}
	}
}

// TestLateRenameOfAMissingSource: a late rename whose source was removed
// meanwhile fails at Release, and renames nothing.
func TestLateRenameOfAMissingSource(t *testing.T) {
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	writeFile(t, ffs, filepath.Join(dir, "a.tmp"), "x")
	late := &vfs.Late{}
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpRename {
			return late
		}
		return nil
	})
	if err := ffs.Rename(filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Rename = %v", err)
	}
	ffs.Set(nil)
	if err := ffs.Remove(filepath.Join(dir, "a.tmp")); err != nil {
		t.Fatal(err)
	}
	if late.Held() != 1 {
		t.Fatalf("Held = %d, want 1", late.Held())
	}
	if err := late.Release(); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Release = %v, want ErrNotExist", err)
	}
	if _, err := ffs.Stat(filepath.Join(dir, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat after the failed late rename = %v", err)
	}
}

// TestListLag: inside the window, List leaves out what was created or
// renamed into place and shows what was removed; Stat sees the truth; a
// name match limits the lag; catchUp ends it.
func TestListLag(t *testing.T) {
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	for _, n := range []string{"old", "gone", "moved.tmp", "other-old"} {
		writeFile(t, ffs, filepath.Join(dir, n), "x")
	}
	catchUp := ffs.ListLag(func(p string) bool { return filepath.Base(p) != "other-new" })
	writeFile(t, ffs, filepath.Join(dir, "new"), "x")
	writeFile(t, ffs, filepath.Join(dir, "other-new"), "x") // not matched: listed at once
	writeFile(t, ffs, filepath.Join(dir, "brief"), "x")     // made and removed in the window
	writeFile(t, ffs, filepath.Join(dir, "sub", "f"), "x")  // a new folder
	for _, n := range []string{"gone", "brief"} {
		if err := ffs.Remove(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ffs.Rename(filepath.Join(dir, "moved.tmp"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		es, err := ffs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	if got, want := list(), []string{"gone", "moved.tmp", "old", "other-new", "other-old"}; !slices.Equal(got, want) {
		t.Fatalf("List in the window = %v, want %v", got, want)
	}
	for _, n := range []string{"new", "moved", "sub"} {
		if _, err := ffs.Stat(filepath.Join(dir, n)); err != nil {
			t.Fatalf("Stat %s in the window: %v", n, err)
		}
	}
	if es, err := ffs.List(filepath.Join(dir, "sub")); err != nil || len(es) != 0 {
		t.Fatalf("List of the hidden folder = %v, %v, want its new file hidden too", es, err)
	}
	catchUp()
	if got, want := list(), []string{"moved", "new", "old", "other-new", "other-old", "sub"}; !slices.Equal(got, want) {
		t.Fatalf("List after catching up = %v, want %v", got, want)
	}
}

func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(name)); err != nil {
		t.Fatal(err)
	}
	w, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
