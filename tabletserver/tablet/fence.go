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
// open: that PUT fences the older owners. It then removes the older
// epochs' manifests (and temporary files) the open's listing showed: on
// the local disk now; on an object store (vfs.WholeFiles) with this
// owner's first batch of removals (removeOldVersions), in the same
// request, so a load costs no DELETE. What the DELETE at the seal did for
// a store whose listing lags (a later opener that sees only an older
// epoch's versions must fail, not open the older state) the later opener
// now does itself: it asks for the seal of every epoch between the newest
// listed and its own by name (manifest.Folder.LoadFor), and this owner
// keeps its seal's version until the older epochs' manifests are gone
// (TestOpenBehindALaggingListing "a new epoch"). Versions of an older
// epoch that land after the listing (an older owner's late save) are
// never read (the newest epoch wins) and go with the next owner's. They
// never pile up: versions count on across epochs, so some owner's save
// is a batch's at least every removeEvery saves, however often the tablet
// moves (TestOlderManifestsDoNotPileUpOnAnObjectStore).
func (t *Tablet) seal(folder manifest.Folder) error {
	older := folder.Before(manifest.ID{Epoch: t.opts.Epoch})
	_, whole := t.opts.FS.(vfs.WholeFiles)
	later := whole && len(older) > 0
	if later {
		t.editMu.Lock()
		t.older, t.ownFrom = older, t.manifestVer+1
		t.editMu.Unlock()
	}
	t.flushMu.Lock()
	t.sealing = true
	err := t.flushLocked(context.Background(), true)
	t.sealing = false
	t.flushMu.Unlock()
	if err != nil {
		return fmt.Errorf("tablet: sealing %s at epoch %d: %w", t.dir, t.opts.Epoch, err)
	}
	if !later {
		if err := manifest.RemoveFiles(t.opts.FS, older); err != nil {
			t.logger.Warn("removing older manifests", "dir", t.dir, "err", err)
		}
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
// below its newest are removed, oldest first and never leaving an older
// one behind a gap, so a reader that finds a listed version finds every
// one after it. Any left over (an owner that stopped between two
// batches) go with a later owner's removal of every older epoch's
// manifest.
//
// The first batch of an owner whose seal left the older epochs' manifests
// (t.older) removes those first, and this owner's own versions only once
// that succeeded (in a second request; a multi-object delete may remove
// some objects and not others): until then the seal's version is there
// for a later opener behind a lagging listing to find by name
// (manifest.Folder.LoadFor). A failed removal is tried again at the next
// batch, from the oldest version it left (t.ownFrom). editMu held.
func (t *Tablet) removeOldVersions(id manifest.ID) {
	if _, whole := t.opts.FS.(vfs.WholeFiles); !whole {
		if id.Version > 2 {
			t.removeVersions([]string{filepath.Join(t.dir, manifest.ID{Epoch: id.Epoch, Version: id.Version - 2}.Name())})
		}
		return
	}
	if id.Version <= removeEvery || id.Version%removeEvery != 1 {
		return
	}
	if len(t.older) > 0 {
		if !t.removeVersions(t.older) {
			return
		}
		t.older = nil
	}
	from := id.Version - removeEvery - 1
	if t.ownFrom > 0 {
		from = t.ownFrom
	}
	var paths []string
	for v := max(from, 1); v <= id.Version-2; v++ {
		paths = append(paths, filepath.Join(t.dir, manifest.ID{Epoch: id.Epoch, Version: v}.Name()))
	}
	t.ownFrom = max(from, 1)
	if t.removeVersions(paths) {
		t.ownFrom = 0
	}
}

// removeVersions removes manifests and reports whether it did.
func (t *Tablet) removeVersions(paths []string) bool {
	if err := manifest.RemoveFiles(t.opts.FS, paths); err != nil {
		t.logger.Warn("removing old manifest versions", "dir", t.dir, "versions", len(paths), "err", err)
		return false
	}
	return true
}
