package tablet

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
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

// TestOpenBehindALaggingListingWhileOlderManifestsWait: on an object store
// the seal no longer deletes the older epochs' manifests (a load makes no
// DELETE); they go with the new owner's first batch of removals (version
// 17), and the seal's own version stays until that removal succeeded.
// Meanwhile an opener whose listing lags behind the new owner's seal sees
// only the older epoch's versions, still there: it must fail, never open
// that older state (it lacks every row the new owner flushed since), after
// every save of the new owner, before and after its batches, whether the
// older manifests' removal succeeds or keeps failing, and whether the
// opener's epoch follows the new owner's or leaves a gap (loads that
// failed in between). Once the listing caught up the next owner opens
// with every row.
func TestOpenBehindALaggingListingWhileOlderManifestsWait(t *testing.T) {
	for _, failRemoval := range []bool{false, true} {
		t.Run(fmt.Sprintf("removal of the older manifests fails %v", failRemoval), func(t *testing.T) {
			r := newWholeEpochRig(t)
			r.write(0, 5)
			r.flush()
			catchUp := r.fs.ListLag(isManifestPath)
			r.nextOwner() // epoch 2, behind the listing too: it sees epoch 1's newest
			if failRemoval {
				r.fs.Set(failOn(vfs.OpRemoveWhole, r.manifestOf(1), errors.New("injected: removal fails")))
			}
			for i := range 2*removeEvery + 4 {
				r.write(5+i, 6+i)
				r.flush()
				for _, epoch := range []int64{r.epoch + 1, r.epoch + 3} {
					o := r.options(r.fs)
					o.Epoch = epoch
					tb, err := Open(o)
					if err == nil {
						tb.Close()
						t.Fatalf("after save %d of epoch 2, an opener at epoch %d behind the listing opened epoch 1's state", i+1, epoch)
					}
					if !errors.Is(err, manifest.ErrListingBehind) || !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("after save %d of epoch 2, Open at epoch %d = %v, want the listing found behind", i+1, epoch, err)
					}
				}
			}
			catchUp()
			r.fs.Set(nil)
			ids, err := manifest.List(r.options(r.fs).FS, r.dir)
			if err != nil {
				t.Fatal(err)
			}
			older := 0
			for _, id := range ids {
				if id.Epoch < 2 {
					older++
				}
			}
			if want := map[bool]int{false: 0, true: 2}[failRemoval]; older != want {
				t.Fatalf("after the batches the folder lists %v: %d of epoch 1, want %d", ids, older, want)
			}
			r.nextOwner()
			r.write(100, 105)
			r.flush()
			r.nextOwner()
		})
	}
}

// TestOlderManifestsDoNotPileUpOnAnObjectStore: a tablet moved again and
// again without saves of its own between (each owner: its seal and the
// version its close saves) still has its older manifests removed: the
// versions count on across epochs, so some owner's save is a batch's at
// least every removeEvery saves, and it removes the older epochs' too.
func TestOlderManifestsDoNotPileUpOnAnObjectStore(t *testing.T) {
	r := newWholeEpochRig(t)
	r.write(0, 5)
	for range 6 * removeEvery {
		r.nextOwner()
		ids, err := manifest.List(r.options(r.fs).FS, r.dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > removeEvery+2 {
			t.Fatalf("at epoch %d the folder lists %d manifests, want at most %d", r.epoch, len(ids), removeEvery+2)
		}
	}
}
