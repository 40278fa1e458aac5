package tablet

import (
	"errors"
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
// of the unlisted flush were missing.
func TestOpenBehindALaggingListing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		work  func(r *faultRig) // in the lag's window
		opens bool              // while the listing lags
	}{
		{"one flush", func(r *faultRig) { r.write(5, 10); r.flush() }, true},
		{"two flushes", func(r *faultRig) { r.write(5, 10); r.flush(); r.write(10, 15); r.flush() }, true},
		{"flushes and a compaction", func(r *faultRig) {
			r.write(5, 10)
			r.flush()
			if err := r.tb.Compact(bg, true); err != nil {
				r.t.Fatal(err)
			}
			r.write(10, 15)
			r.flush()
		}, false},
		{"a new epoch", func(r *faultRig) {
			r.nextOwner() // its seal deletes epoch 1's versions
			r.write(5, 10)
			r.flush()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newEpochRig(t)
			r.write(0, 5)
			r.flush()
			catchUp := r.fs.ListLag(isManifestPath)
			tc.work(r)
			if tc.opens {
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
