package tablet

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// A failing disk under the engine (Options.FS): what failed says so, what
// was acknowledged survives a reopen on a healthy disk, and the manifest
// never lists a file that is not whole.

// TestLogFaultFailsTheWrite: a full disk under the commit log fails the
// write that hit it (ErrLogFailed: not acknowledged) and every later one
// (ErrFailed: the log is not trusted again), and tells the owner once.
func TestLogFaultFailsTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
		err  error
	}{
		{"no space on write", vfs.OpWrite, vfs.NoSpace()},
		{"short write", vfs.OpWrite, &vfs.ShortWrite{N: 7, Err: vfs.NoSpace()}},
		{"no space on sync", vfs.OpSync, vfs.NoSpace()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.write(0, 5)
			r.flush()
			r.write(5, 10)
			r.fs.Set(failOn(tc.op, hasSuffix(".log"), tc.err))
			err := r.tryWrite("lost")
			if !errors.Is(err, ErrLogFailed) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("write on a full disk = %v, want ErrLogFailed and ENOSPC", err)
			}
			r.fs.Set(nil) // a disk that works again does not revive the log
			if err := r.tryWrite("after"); !errors.Is(err, ErrFailed) {
				t.Fatalf("write after the failure = %v, want ErrFailed", err)
			}
			if err := r.tb.Flush(bg); !errors.Is(err, ErrFailed) {
				t.Fatalf("Flush after the failure = %v, want ErrFailed", err)
			}
			if got := r.reported(); len(got) != 1 || !errors.Is(got[0], syscall.ENOSPC) {
				t.Fatalf("OnFailure got %v, want the one failure", got)
			}
			r.checkAcked()
			r.reopen()
			// The failed write may or may not be in the log; never half.
			if got := readRow(t, r.tb, "lost", nil); got != "" && got != wantRow("lost") {
				t.Fatalf("the failed write reads %q", got)
			}
			if got := readRow(t, r.tb, "after", nil); got != "" {
				t.Fatalf("a refused write reads %q", got)
			}
		})
	}
}

// TestFlushFaultKeepsMemtable: a full disk while an SSTable is written
// fails the flush with an error naming the file or folder; the manifest
// and the SSTables on disk are as before, the data stays readable from the
// memtable, the tablet keeps taking writes, and a flush on the healthy disk
// publishes everything.
func TestFlushFaultKeepsMemtable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    vfs.Op
		match func(string) bool
		err   error
	}{
		{"no space to create", vfs.OpCreate, sst(), vfs.NoSpace()},
		{"no space on write", vfs.OpWrite, sst(), vfs.NoSpace()},
		{"short write", vfs.OpWrite, sst(), &vfs.ShortWrite{N: 100, Err: vfs.NoSpace()}},
		// Family a's file is whole and must go too.
		{"short write of the second family", vfs.OpWrite, sst("b"), &vfs.ShortWrite{N: 100, Err: vfs.NoSpace()}},
		{"no space on sync", vfs.OpSync, sst(), vfs.NoSpace()},
		{"no space on folder sync", vfs.OpSyncDir, hasSuffix("/a"), vfs.NoSpace()}, // family a's folder
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFaultRig(t)
			r.write(0, 5)
			r.flush()
			r.write(5, 10)
			mBefore := readManifest(t, r.dir)
			sstBefore, err := listSST(r.dir)
			if err != nil {
				t.Fatal(err)
			}
			r.fs.Set(failOn(tc.op, tc.match, tc.err))
			err = r.tb.Flush(bg)
			r.fs.Set(nil)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), r.dir) {
				t.Fatalf("Flush on a full disk = %v, want ENOSPC naming the file", err)
			}
			if !bytes.Equal(readManifest(t, r.dir), mBefore) {
				t.Fatal("a failed flush changed the manifest")
			}
			if sst, err := listSST(r.dir); err != nil || !maps.Equal(sst, sstBefore) {
				t.Fatalf("SSTables after the failed flush %v (%v), before %v: a partial file is left", sst, err, sstBefore)
			}
			if got := r.reported(); len(got) != 0 {
				t.Fatalf("a failed SSTable write failed the tablet: %v", got)
			}
			r.checkAcked()
			r.write(10, 12)
			r.flush()
			checkReferencedExist(t, r.dir)
			r.reopen()
		})
	}
}

// TestManifestFaultFailsTablet: a manifest that cannot be saved during a
// flush or a compaction fails the call and tells the owner (OnFailure), as
// the tablet must then leave service; reopened on a healthy disk, it has
// every acknowledged row and every file its manifest lists. A failed
// folder fsync after the rename leaves the new manifest in place: its
// files must not be deleted.
func TestManifestFaultFailsTablet(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   vfs.Op
		file string // the file (or folder, "") the fault hits; "*" stands for any version's name
	}{
		{"no space on write", vfs.OpWrite, manifest.FileName + "-0-v*.tmp"},
		{"no space on sync", vfs.OpSync, manifest.FileName + "-0-v*.tmp"},
		{"failed rename", vfs.OpRename, manifest.FileName + "-0-v*"},
		{"failed folder sync", vfs.OpSyncDir, ""},
	} {
		for _, during := range []string{"flush", "compaction"} {
			t.Run(tc.name+" during "+during, func(t *testing.T) {
				r := newFaultRig(t)
				r.write(0, 5)
				r.flush()
				r.write(5, 10)
				if during == "compaction" {
					r.flush()
				}
				r.fs.Set(failOn(tc.op, matches(filepath.Join(r.dir, tc.file)), vfs.NoSpace()))
				var err error
				if during == "flush" {
					err = r.tb.Flush(bg)
				} else {
					err = r.tb.Compact(bg, true)
				}
				r.fs.Set(nil)
				if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "manifest") {
					t.Fatalf("%s with a failing manifest = %v, want ENOSPC from the manifest", during, err)
				}
				if got := r.reported(); len(got) != 1 || !errors.Is(got[0], syscall.ENOSPC) {
					t.Fatalf("OnFailure got %v, want the one failure", got)
				}
				if err := r.tb.Apply(bg, []byte("after"), []cell.Mutation{set("a", "q", 1, "v")}); !errors.Is(err, ErrFailed) {
					t.Fatalf("a write after the failed manifest save = %v, want ErrFailed", err)
				}
				checkReferencedExist(t, r.dir)
				r.checkAcked()
				r.reopen()
				r.write(10, 12)
				r.flush()
				if err := r.tb.Compact(bg, true); err != nil {
					t.Fatalf("Compact on the healthy disk: %v", err)
				}
				r.reopen()
			})
		}
	}
}

// TestSSTableReadFaultIsAnError: a failing read of an SSTable fails the
// read, the scan, the compaction and the open that hit it with that error,
// not with corruption (which would condemn a good file) and not with
// wrong data; once the disk reads again, everything is there.
func TestSSTableReadFaultIsAnError(t *testing.T) {
	r := newFaultRig(t)
	r.write(0, 5)
	r.flush()
	r.write(5, 10)
	r.flush()
	isIOError := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, vfs.ErrInjected) || errors.Is(err, corruption.ErrCorrupt) {
			t.Fatalf("%s on a failing disk = %v, want the read error and not corruption", what, err)
		}
	}
	readFault := failOn(vfs.OpRead, sst(), vfs.Failf("bad sector"))
	r.fs.Set(readFault)
	_, err := r.tb.ReadRow(bg, []byte("r003"), nil)
	isIOError("ReadRow", err)
	it, err := r.tb.NewRowIterator(bg, ReadOptions{})
	if err == nil {
		for it.Next() {
			t.Fatalf("scan on a failing disk returned row %s", it.Row())
		}
		err = it.Close()
	}
	isIOError("scan", err)
	mBefore := readManifest(t, r.dir)
	isIOError("Compact", r.tb.Compact(bg, true))
	if !bytes.Equal(readManifest(t, r.dir), mBefore) {
		t.Fatal("a failed compaction changed the manifest")
	}
	if got := r.reported(); len(got) != 0 {
		t.Fatalf("a failed read failed the tablet: %v", got)
	}
	r.fs.Set(nil)
	r.checkAcked()

	if err := r.tb.Close(); err != nil {
		t.Fatal(err)
	}
	// The open reads no SSTable (they open on their first read:
	// tablefile.go); the first read gets the error the open got before,
	// and a read once the disk reads again opens the file and finds
	// everything: a failed open is not kept.
	r.fs.Set(readFault)
	tb, err := Open(r.options(r.fs))
	if err != nil {
		t.Fatalf("Open on a failing disk read an SSTable: %v", err)
	}
	_, err = tb.ReadRow(bg, []byte("r003"), nil)
	isIOError("the first ReadRow after the open", err)
	if !strings.Contains(err.Error(), "tablet: open sstable of family") {
		t.Fatalf("the first read's error %q does not say the SSTable's open failed, as the load's did", err)
	}
	r.fs.Set(nil)
	r.tb = tb
	r.checkAcked()
	r.reopen()
}

// TestFlushSkipsNumbersOfOrphanSSTables: a process killed mid-flush leaves
// SSTables no manifest names, under numbers the next process of the same
// epoch hands out again. Its flushes take the next free numbers and leave
// those files alone, instead of failing (which would stall writers on a
// full memtable: stall.go).
func TestFlushSkipsNumbersOfOrphanSSTables(t *testing.T) {
	dir := t.TempDir()
	tb := openTablet(t, testOptions(dir))
	apply(t, tb, "r1", set("a", "q", 1, "v1"), set("b", "q", 1, "v1"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	tb.editMu.Lock()
	next := tb.nextFileNum
	tb.editMu.Unlock()
	orphans := map[string]string{}
	for i, fam := range []string{"a", "b", "a"} {
		p := filepath.Join(dir, fam, fmt.Sprintf("%06d.sst", next+uint64(i)))
		orphans[p] = "left by a killed process " + fam
		if err := os.WriteFile(p, []byte(orphans[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, tb, "r2", set("a", "q", 1, "v2"), set("b", "q", 1, "v2"))
	if err := tb.Flush(bg); err != nil {
		t.Fatalf("Flush over orphan SSTables: %v", err)
	}
	for p, want := range orphans {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Fatalf("orphan %s now reads %q (%v)", p, got, err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTablet(t, testOptions(dir))
	for _, row := range []string{"r1", "r2"} {
		v := "v" + row[1:]
		if got, want := readRow(t, tb, row, nil), fmt.Sprintf("a:q@1=%s b:q@1=%s", v, v); got != want {
			t.Fatalf("row %s reads %q, want %q", row, got, want)
		}
	}
}

// TestSplitAndMergeAfterAFailedFlushKeepEveryWrite: a flush that failed
// leaves its memtable frozen, and later writes go to a new active one. A
// split or a merge must write both into SSTables before the children (or
// the merged tablet) take the files: the children never read the
// parent's log.
func TestSplitAndMergeAfterAFailedFlushKeepEveryWrite(t *testing.T) {
	root := t.TempDir()
	fsys := vfs.NewFaulty(vfs.Default)
	failedFlush := func(tb *Tablet, frozen, active string) {
		t.Helper()
		apply(t, tb, frozen, set("a", "q", 1, "frozen"))
		fsys.Set(failOn(vfs.OpCreate, sst(), vfs.NoSpace()))
		if err := tb.Flush(bg); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Flush on a full disk = %v, want ENOSPC", err)
		}
		fsys.Set(nil)
		apply(t, tb, active, set("a", "q", 1, "active"))
	}
	open := func(name string) *Tablet {
		o := testOptions(filepath.Join(root, name))
		o.FS, o.Create = fsys, name == "parent"
		return openTablet(t, o)
	}

	parent := open("parent")
	failedFlush(parent, "a1", "x1")
	if err := parent.Split(bg, []byte("m"), filepath.Join(root, "left"), filepath.Join(root, "right")); err != nil {
		t.Fatal(err)
	}
	left, right := open("left"), open("right")
	if got, got2 := readRow(t, left, "a1", nil), readRow(t, right, "x1", nil); got != "a:q@1=frozen" || got2 != "a:q@1=active" {
		t.Fatalf("after a split that followed a failed flush: a1 %q (frozen), x1 %q (active)", got, got2)
	}
	failedFlush(left, "a2", "a3")
	failedFlush(right, "x2", "x3")
	frozen, active := "a:q@1=frozen", "a:q@1=active"
	want := map[string]string{"a1": frozen, "x1": active, "a2": frozen, "a3": active, "x2": frozen, "x3": active}
	if err := Merge(bg, left, right, filepath.Join(root, "merged")); err != nil {
		t.Fatal(err)
	}
	merged := open("merged")
	for row, w := range want {
		if got := readRow(t, merged, row, nil); got != w {
			t.Errorf("row %s after a split and a merge, each after a failed flush: %q, want %q", row, got, w)
		}
	}
}
