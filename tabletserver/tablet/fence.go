package tablet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// Fencing against older owners (Options.Epoch, docs/OWNERSHIP.md). On a
// shared folder an older owner of the tablet may still be running: paused
// past its lease, then woken, it can finish a write, a flush or a
// compaction it had started. The engine opened at a newer epoch makes sure
// nothing such an owner does afterwards is trusted:
//
//   - files: new SSTables are numbered from Epoch<<32, a range no older
//     owner allocates from, so the two never collide;
//   - manifest: written as versions MANIFEST-<epoch>-v<n>; the newest
//     epoch wins, so a late save of an older epoch's manifest is ignored,
//     and an engine
//     refuses to open below a newer manifest (ErrNewerOwner);
//   - commit log: at open, after replaying, the engine flushes what it
//     replayed and saves a manifest with a new replay point (seal). On the
//     server's shared log (Options.Log) that manifest names this owner's
//     log, and replay only ever takes records tagged with the epoch of the
//     manifest being opened: what an older owner appends later goes to its
//     own log, or carries its older epoch, and is never replayed. On the
//     tablet's own log the replay point is past every segment the seal
//     saw: records an older owner appends later land in segments before it,
//     and it cannot start a segment past it (segments are created
//     exclusively, and the new owner created it).
//   - deletions: an engine deletes obsolete SSTables and log segments only
//     while its write guard allows AND its own epoch's manifest is still
//     the newest in the folder (mayDelete). What remains is a window of a
//     process paused between that check and the unlink itself.

// seal flushes whatever replay put in the memtable and saves this epoch's
// manifest with a replay point past every log segment that existed at
// open, then removes the older epochs' manifests (and temporary files)
// the open's listing showed, in one request on an object store. Versions
// of an older epoch that land after that listing (an older owner's late
// save) are never read (the newest epoch wins) and go with the next
// owner's seal. The DELETE stays on the load's path, though the seal's
// PUT alone fences the older owners: on a store whose listing lags, a
// later opener that sees only the older epoch's versions must find them
// gone and fail, not open the older state (TestOpenBehindALaggingListing
// "a new epoch"), and a later batch or a background delete would leave
// that window open while this owner takes writes.
func (t *Tablet) seal(folder manifest.Folder) error {
	t.flushMu.Lock()
	t.sealing = true
	err := t.flushLocked(context.Background(), true)
	t.sealing = false
	t.flushMu.Unlock()
	if err != nil {
		return fmt.Errorf("tablet: sealing %s at epoch %d: %w", t.dir, t.opts.Epoch, err)
	}
	if err := manifest.RemoveFiles(t.opts.FS, folder.Before(manifest.ID{Epoch: t.opts.Epoch})); err != nil {
		t.logger.Warn("removing older manifests", "dir", t.dir, "err", err)
	}
	return nil
}

// mayDelete reports whether the engine may delete a file of the tablet
// now: the guard allows it and no newer owner has written a manifest.
func (t *Tablet) mayDelete(what string) bool {
	if t.checkGuard(what) != nil {
		return false
	}
	if t.opts.Epoch == 0 {
		return true
	}
	epochs, err := manifest.Epochs(t.opts.FS, t.dir)
	if err != nil || len(epochs) == 0 || epochs[len(epochs)-1] != t.opts.Epoch {
		t.logger.Warn("not deleting: this owner's manifest is not the newest", "dir", t.dir, "epoch", t.opts.Epoch, "manifests", epochs, "op", what, "err", err)
		return false
	}
	return true
}

// failed records that the commit log or the manifest could not be written
// and tells the owner, once (Options.OnFailure). Call it without locks.
func (t *Tablet) failed(err error) {
	if errors.Is(err, wal.ErrClosed) || t.closed.Load() {
		return // closing, not failing
	}
	t.failOnce.Do(func() {
		t.logger.Error("tablet failed: it takes no more writes", "dir", t.dir, "err", err)
		if t.opts.OnFailure != nil {
			t.opts.OnFailure(err)
		}
	})
}

// removeEvery is how many versions of the manifest an owner on an object
// store saves between two removals of the older ones: one multi-object
// delete of up to removeEvery versions, instead of a DELETE per save.
const removeEvery = 16

// removeOldVersions removes the versions of the manifest before the one
// before id, once id is durable: the owner keeps the version before its
// newest for readers that chose it. On the local disk it removes id-2 at
// every save. On an object store (vfs.WholeFiles) it removes versions in
// batches (at versions 17, 33, 49, ...: the 16 before id-1), so a save
// costs one PUT and, on average, 1/16 of a DELETE. A version left a while
// longer is harmless: readers take the newest version (asking for the
// ones after the newest listed by name), and only this owner's versions
// below its newest are removed, never one a reader could need instead.
// Any left over (an owner that stopped between two batches) go with the
// next owner's seal, which removes every older epoch's manifest.
func (t *Tablet) removeOldVersions(id manifest.ID) {
	var paths []string
	if _, whole := t.opts.FS.(vfs.WholeFiles); !whole {
		if id.Version > 2 {
			paths = []string{filepath.Join(t.dir, manifest.ID{Epoch: id.Epoch, Version: id.Version - 2}.Name())}
		}
	} else if id.Version > removeEvery && id.Version%removeEvery == 1 {
		for v := id.Version - removeEvery - 1; v <= id.Version-2; v++ {
			if v > 0 {
				paths = append(paths, filepath.Join(t.dir, manifest.ID{Epoch: id.Epoch, Version: v}.Name()))
			}
		}
	}
	if err := manifest.RemoveFiles(t.opts.FS, paths); err != nil {
		t.logger.Warn("removing old manifest versions", "dir", t.dir, "versions", len(paths), "err", err)
	}
}
