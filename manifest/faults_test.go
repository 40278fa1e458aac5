package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// TestFailedSaveKeepsOldState fails each step of a save on a full disk:
// before the rename the old state stays and the error is a plain one; a
// failed folder fsync after the rename says the new state may stand
// (ErrMaybeSaved). A later save on a healthy disk works either way.
func TestFailedSaveKeepsOldState(t *testing.T) {
	for _, tc := range []struct {
		op        vfs.Op
		short     bool // a short write rather than none at all
		maybe     bool // the error wraps ErrMaybeSaved
		loadsNext bool // on the local disk the new state is read back
	}{
		{op: vfs.OpCreate},
		{op: vfs.OpWrite},
		{op: vfs.OpWrite, short: true},
		{op: vfs.OpSync},
		{op: vfs.OpClose},
		{op: vfs.OpRename},
		{op: vfs.OpSyncDir, maybe: true, loadsNext: true},
	} {
		name := string(tc.op)
		if tc.short {
			name = "short " + name
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ffs := vfs.NewFaulty(vfs.Default)
			old := sampleState()
			if err := Save(ffs, dir, old); err != nil {
				t.Fatal(err)
			}
			next := old
			next.LastSeq, next.ReplayPoint = 200, 8
			ffs.Set(func(op vfs.Op, _ string) error {
				switch {
				case op != tc.op:
					return nil
				case tc.short:
					return &vfs.ShortWrite{N: 10, Err: vfs.NoSpace()}
				}
				return vfs.NoSpace()
			})
			err := Save(ffs, dir, next)
			ffs.Set(nil)
			if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrMaybeSaved) != tc.maybe {
				t.Fatalf("Save = %v, want ENOSPC, ErrMaybeSaved %v", err, tc.maybe)
			}
			want := old
			if tc.loadsNext {
				want = next
			}
			if got, _, err := Load(ffs, dir); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Load after the failed save = %+v, %v", got, err)
			}
			if err := Save(ffs, dir, next); err != nil {
				t.Fatalf("Save on a healthy disk: %v", err)
			}
			if got, _, err := Load(ffs, dir); err != nil || !reflect.DeepEqual(got, next) {
				t.Fatalf("Load after the healthy save = %+v, %v", got, err)
			}
		})
	}
}

// TestRenameOfUnknownOutcome: a rename that failed without saying it did
// not happen is read back. Found whole, the save happened; absent or
// unreadable, the save may have happened or may still happen
// (ErrMaybeSaved), and the temporary file stays for a late rename, which
// then lands whole; a later RemoveBefore deletes the leftover.
func TestRenameOfUnknownOutcome(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fault     func(late *vfs.Late) error // for the rename
		unread    bool                       // reading the new version back fails
		maybe     bool
		loadsNext bool // right after the save
	}{
		{name: "not applied", fault: func(*vfs.Late) error { return vfs.NoSpace() }},
		{name: "answer lost", fault: func(*vfs.Late) error { return &vfs.AfterApply{Err: vfs.NoSpace()} }, loadsNext: true},
		{name: "answer lost, unread", fault: func(*vfs.Late) error { return &vfs.AfterApply{Err: vfs.NoSpace()} }, unread: true, maybe: true, loadsNext: true},
		{name: "late", fault: func(l *vfs.Late) error { return l }, maybe: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ffs := vfs.NewFaulty(vfs.Default)
			old := sampleState()
			if err := SaveVersion(ffs, dir, ID{Epoch: 3, Version: 1}, old); err != nil {
				t.Fatal(err)
			}
			next := old
			next.LastSeq, next.ReplayPoint = 200, 8
			id := ID{Epoch: 3, Version: 2}
			late := &vfs.Late{}
			ffs.Set(func(op vfs.Op, name string) error {
				switch {
				case op == vfs.OpRename:
					return tc.fault(late)
				case tc.unread && op == vfs.OpOpen && filepath.Base(name) == id.Name():
					return vfs.Failf("read back")
				}
				return nil
			})
			err := SaveVersion(ffs, dir, id, next)
			ffs.Set(nil)
			if got := errors.Is(err, ErrMaybeSaved); got != tc.maybe || (err == nil) != (tc.loadsNext && !tc.maybe) {
				t.Fatalf("SaveVersion = %v, want ErrMaybeSaved %v", err, tc.maybe)
			}
			want := old
			if tc.loadsNext {
				want = next
			}
			if got, _, err := Load(ffs, dir); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Load after the save = %+v, %v", got, err)
			}
			tmp := filepath.Join(dir, id.Name()+".tmp")
			if _, err := os.Stat(tmp); (err == nil) != (tc.name == "late") {
				t.Fatalf("temporary file after the save: %v", err)
			}
			if err := late.Release(); err != nil {
				t.Fatalf("the late rename: %v", err)
			}
			if tc.name != "not applied" {
				want = next // whatever way, it landed
			}
			if got, _, err := Load(ffs, dir); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Load at the end = %+v, %v", got, err)
			}
			// A leftover temporary file of an older version goes with it.
			if err := os.WriteFile(filepath.Join(dir, "MANIFEST-3-v7.tmp"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := RemoveOlder(ffs, dir, 4); err != nil {
				t.Fatal(err)
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Fatalf("after RemoveOlder the folder holds %v", es)
			}
		})
	}
}

// TestNewestAsksPastTheListing: versions the listing does not show yet are
// found by name, read, and never written again by SaveEpoch.
func TestNewestAsksPastTheListing(t *testing.T) {
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	if err := SaveEpoch(ffs, dir, 2, sampleState()); err != nil {
		t.Fatal(err)
	}
	catchUp := ffs.ListLag(nil)
	next := sampleState()
	for v := uint64(2); v <= 3; v++ {
		next.LastSeq = 100 * v
		if err := SaveEpoch(ffs, dir, 2, next); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _ := List(ffs, dir); !reflect.DeepEqual(ids, []ID{{2, 1}}) {
		t.Fatalf("the listing shows %v, want only the first version", ids)
	}
	got, id, found, err := LoadLatest(ffs, dir)
	if err != nil || !found || id != (ID{2, 3}) || !reflect.DeepEqual(got, next) {
		t.Fatalf("LoadLatest = %+v %v %v %v, want version 3", got, id, found, err)
	}
	catchUp()
	if ids, _ := List(ffs, dir); !reflect.DeepEqual(ids, []ID{{2, 1}, {2, 2}, {2, 3}}) {
		t.Fatalf("after catching up the listing shows %v", ids)
	}
}
