package tablet

import (
	"context"
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/manifest"
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
// open, then removes older epochs' manifests.
func (t *Tablet) seal() error {
	t.flushMu.Lock()
	err := t.flushLocked(context.Background(), true)
	t.flushMu.Unlock()
	if err != nil {
		return fmt.Errorf("tablet: sealing %s at epoch %d: %w", t.dir, t.opts.Epoch, err)
	}
	if err := manifest.RemoveOlder(t.opts.FS, t.dir, t.opts.Epoch); err != nil {
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
