package tablet

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
)

// isManifestPath matches manifest versions and their temporary files.
func isManifestPath(p string) bool { return strings.HasPrefix(filepath.Base(p), manifest.FileName) }

// TestOpenBehindALaggingListing: the store's listing lags behind the
// newest manifest versions and still shows the ones deleted since, while a
// read of a name finds what is there. The next owner must never open an
// older state than the newest: it names a replay point before log segments
// a flush deleted, and files a compaction deleted. It opens the newest
// version when it can find it by name (the version after the newest
// listed), and otherwise fails, on a listed version that is gone, until the
// listing caught up. Before, it opened the newest listed version: the rows
// of the unlisted flush were missing. Each case runs on the local disk's
// paths and on an object store's (whole files: the manifest read with a
// GET by name, old versions removed in batches, so the compaction's case
// finds its way to the newest version by name there and opens).
func TestOpenBehindALaggingListing(t *testing.T) {
	for _, tc := range []struct {
		name       string
		work       func(r *faultRig) // in the lag's window
		opens      bool              // while the listing lags
		opensWhole bool              // the same on whole files
	}{
		{"one flush", func(r *faultRig) { r.write(5, 10); r.flush() }, true, true},
		{"two flushes", func(r *faultRig) { r.write(5, 10); r.flush(); r.write(10, 15); r.flush() }, true, true},
		{"flushes and a compaction", func(r *faultRig) {
			r.write(5, 10)
			r.flush()
			if err := r.tb.Compact(bg, true); err != nil {
				r.t.Fatal(err)
			}
			r.write(10, 15)
			r.flush()
		}, false, true},
		{"a new epoch", func(r *faultRig) {
			r.nextOwner() // its seal deletes epoch 1's versions
			r.write(5, 10)
			r.flush()
		}, false, false},
	} {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, whole files %v", tc.name, whole), func(t *testing.T) {
				r := newEpochRig(t)
				if whole {
					r = newWholeEpochRig(t)
				}
				r.write(0, 5)
				r.flush()
				catchUp := r.fs.ListLag(isManifestPath)
				tc.work(r)
				if whole && tc.opensWhole || !whole && tc.opens {
					r.nextOwner()
				} else {
					_ = r.tb.Close()
					o := r.options(r.fs)
					o.Epoch = r.epoch + 1
					if tb, err := Open(o); err == nil {
						tb.Close()
						t.Fatal("opened behind a listing that shows only deleted versions")
					} else if !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("Open = %v, want a missing version", err)
					}
				}
				catchUp()
				r.nextOwner()
				r.write(20, 25)
				r.flush()
				r.nextOwner()
			})
		}
	}
}
