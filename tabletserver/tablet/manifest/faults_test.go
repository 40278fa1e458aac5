package manifest

import (
	"errors"
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
