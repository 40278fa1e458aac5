package tablet

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// forgetRows removes the rows in [start, end) from the rig's acknowledged
// rows: a drop removed them.
func (r *faultRig) forgetRows(start, end string) {
	kept := r.acked[:0]
	for _, row := range r.acked {
		if row < start || row >= end {
			kept = append(kept, row)
		}
	}
	r.acked = kept
}

// TestDropRangeFaults: a drop whose rewrite of an SSTable fails changes
// nothing and leaves the tablet serving; one whose manifest save fails
// fails the tablet like any manifest save, and the next owner (a reopen on
// a healthy disk) finds every row the drop did not publish, and can drop.
func TestDropRangeFaults(t *testing.T) {
	t.Run("rewrite fails", func(t *testing.T) {
		r := newFaultRig(t)
		r.write(0, 10)
		r.flush()
		r.fs.Set(failOn(vfs.OpCreate, sst(), vfs.NoSpace()))
		err := r.tb.DropRange(bg, []byte("r003"), []byte("r007"))
		r.fs.Set(nil)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("DropRange with a full disk = %v, want ENOSPC", err)
		}
		if got := r.reported(); len(got) != 0 {
			t.Fatalf("a failed rewrite failed the tablet: %v", got)
		}
		r.checkAcked()
		r.write(10, 12)
		if err := r.tb.DropRange(bg, []byte("r003"), []byte("r007")); err != nil {
			t.Fatal(err)
		}
		r.forgetRows("r003", "r007")
		if got := scan(t, r.tb, ReadOptions{Ranges: []RowRange{{Start: []byte("r003"), End: []byte("r007")}}}); got != "" {
			t.Fatalf("after the drop the range reads %s", got)
		}
		r.reopen()
		if got := scan(t, r.tb, ReadOptions{Ranges: []RowRange{{Start: []byte("r003"), End: []byte("r007")}}}); got != "" {
			t.Fatalf("after reopening the range reads %s", got)
		}
	})
	t.Run("manifest save fails", func(t *testing.T) {
		r := newFaultRig(t)
		r.write(0, 10)
		r.flush()
		r.write(10, 15) // in the memtable: the drop's flush saves one manifest first
		saves := 0
		r.fs.Set(func(op vfs.Op, name string) error {
			if ok, _ := filepath.Match(filepath.Join(r.dir, manifest.FileName+"-0-v*"), name); ok && op == vfs.OpRename {
				if saves++; saves == 2 { // the drop's own manifest
					return vfs.NoSpace()
				}
			}
			return nil
		})
		err := r.tb.DropRange(bg, []byte("r003"), []byte("r012"))
		r.fs.Set(nil)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "manifest") {
			t.Fatalf("DropRange with a failing manifest = %v, want ENOSPC from the manifest", err)
		}
		if got := r.reported(); len(got) != 1 {
			t.Fatalf("OnFailure got %v, want the one failure", got)
		}
		if err := r.tryWrite("r020"); !errors.Is(err, ErrFailed) {
			t.Fatalf("a write after the failed manifest save = %v, want ErrFailed", err)
		}
		checkReferencedExist(t, r.dir)
		r.reopen() // every acknowledged row is back: the drop was not published
		if err := r.tb.DropRange(bg, []byte("r003"), []byte("r012")); err != nil {
			t.Fatal(err)
		}
		r.forgetRows("r003", "r012")
		r.reopen()
		if got := scan(t, r.tb, ReadOptions{Ranges: []RowRange{{Start: []byte("r003"), End: []byte("r012")}}}); got != "" {
			t.Fatalf("after the second drop and a reopen the range reads %s", got)
		}
	})
}
