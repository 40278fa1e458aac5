package tablet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tabuladb/tabula/manifest"
)

// Snapshot holds: the engine never removes a file of its own folder that a
// snapshot's hold names (docs/CONTRACTS.md §4a).
//
// A hold (manifest.SaveHold) is a snapshot's record of this tablet's files,
// saved in the tablet's folder. The engine keeps the set of its own files
// that some hold names: read from every hold at open, before anything can
// be removed, and added to by Snapshot under editMu, the lock every
// version edit holds, so a file a hold names is in the set before any edit
// can make it obsolete. An obsolete file in the set is closed when its last
// reader goes and remembered (gone), not removed. ReleaseSnapshot, called
// by the owner once the snapshot's record is gone from etcd (the engine
// knows nothing of etcd), drops a hold: the files that no other hold names
// and no version of this process holds any more are removed, then the
// hold's folder. A crash between the two leaves a hold naming files that
// are gone; releasing it again finishes.
//
// Files a hold names outside the folder (a split child's references to its
// parent's) are never removed by the engine at all: the folder-level
// deleters (a server removing split or merge parents, table deletion, the
// master's GC) read the holds.

// holdSet is what the holds of a tablet's folder keep.
type holdSet struct {
	mu sync.Mutex
	// byID is each hold's own files, as absolute paths.
	byID map[string][]string
	// count is how many holds name each of those files.
	count map[string]int
	// gone are the held files no version of this process holds: obsolete
	// files whose last reader went, and, after an open, the held files
	// its manifest did not name. Removed once no hold names them.
	gone map[string]bool
}

// add records hold id naming the own files paths.
func (h *holdSet) add(id string, paths []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID == nil {
		h.byID, h.count, h.gone = map[string][]string{}, map[string]int{}, map[string]bool{}
	}
	if _, ok := h.byID[id]; ok {
		return
	}
	h.byID[id] = paths
	for _, p := range paths {
		h.count[p]++
	}
}

// keep reports whether the obsolete file path, whose last reader went,
// must stay because a hold names it; if so it is remembered as gone.
func (h *holdSet) keep(path string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count[path] == 0 {
		return false
	}
	h.gone[path] = true
	return true
}

// drop forgets hold id and returns the files that no hold names any more
// and no version holds: the ones to remove.
func (h *holdSet) drop(id string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	paths, ok := h.byID[id]
	if !ok {
		return nil
	}
	delete(h.byID, id)
	var free []string
	for _, p := range paths {
		h.count[p]--
		if h.count[p] > 0 {
			continue
		}
		delete(h.count, p)
		if h.gone[p] {
			delete(h.gone, p)
			free = append(free, p)
		}
	}
	return free
}

// ids returns the holds' ids, sorted.
func (h *holdSet) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.byID))
	for id := range h.byID {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// ownHeld returns the files of the hold state s (paths relative to the
// hold's folder hd) that lie in the tablet's own folder, as absolute paths.
func (t *Tablet) ownHeld(hd string, s manifest.State) []string {
	prefix := filepath.Clean(t.dir) + string(filepath.Separator)
	var out []string
	for _, f := range s.Files {
		if p := filepath.Join(hd, filepath.FromSlash(f.Path)); strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// loadHolds reads every hold of the folder at open, before anything can be
// removed; current are the files the opened manifest names. A hold that
// cannot be read fails the open: removing a file it may name could lose a
// snapshot's data, keeping the tablet closed loses nothing.
func (t *Tablet) loadHolds(current map[string][]*tableFile) error {
	ids, err := manifest.ListHolds(t.opts.FS, t.dir)
	if err != nil {
		return fmt.Errorf("tablet: open %s: %w", t.dir, err)
	}
	live := map[string]bool{}
	for _, fs := range current {
		for _, f := range fs {
			live[f.path] = true
		}
	}
	for _, id := range ids {
		s, err := manifest.LoadHold(t.opts.FS, t.dir, id)
		if errors.Is(err, manifest.ErrNoTablet) {
			// A hold whose save never completed names nothing; its
			// snapshot was never made ready (its record is removed, and
			// its owner releases it).
			t.holds.add(id, nil)
			continue
		}
		if err != nil {
			return fmt.Errorf("tablet: open %s: read snapshot hold %s: %w", t.dir, id, err)
		}
		own := t.ownHeld(manifest.HoldDir(t.dir, id), s)
		t.holds.add(id, own)
		t.holds.mu.Lock()
		for _, p := range own {
			if !live[p] {
				t.holds.gone[p] = true
			}
		}
		t.holds.mu.Unlock()
	}
	return nil
}

// Snapshot saves a hold named id of the tablet's files after a flush, and
// returns its state (paths relative to the hold's folder,
// manifest.HoldDir). Every write acknowledged before the call began is in
// it. The engine removes none of the files it names until
// ReleaseSnapshot(id). A hold of that id must not exist.
func (t *Tablet) Snapshot(ctx context.Context, id string) (manifest.State, error) {
	if err := manifest.ValidateHoldID(id); err != nil {
		return manifest.State{}, err
	}
	if t.closed.Load() {
		return manifest.State{}, ErrClosed
	}
	if err := t.checkGuard("snapshot"); err != nil {
		return manifest.State{}, err
	}
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	if t.closed.Load() {
		return manifest.State{}, ErrClosed
	}
	if err := t.flushAllLocked(ctx); err != nil {
		return manifest.State{}, err
	}
	// editMu orders the hold with every version edit: the files read
	// here are current, so none is obsolete yet, and every edit that makes
	// one obsolete comes after the set below names it.
	t.editMu.Lock()
	defer t.editMu.Unlock()
	v, err := t.currentVersion()
	if err != nil {
		return manifest.State{}, err
	}
	defer v.unref()
	st := manifest.State{
		Files: v.fileRefs(), LastSeq: t.flushedSeq, NextFileNum: t.nextFileNum,
		RangeStart: t.start, RangeEnd: t.end, Parent: t.parent,
	}
	if err := t.checkGuard("save snapshot hold"); err != nil {
		return manifest.State{}, err
	}
	// The set first: a save of unknown outcome may have written the hold.
	hd := manifest.HoldDir(t.dir, id)
	h, err := manifest.Rebase(st, t.dir, hd)
	if err != nil {
		return manifest.State{}, err
	}
	t.holds.add(id, t.ownHeld(hd, h))
	if err := manifest.SaveHold(t.opts.FS, t.dir, id, st); err != nil {
		return manifest.State{}, fmt.Errorf("tablet: snapshot %s of %s: %w", id, t.dir, err)
	}
	return h, nil
}

// Snapshots lists the ids of the holds in the tablet's folder (read at
// open, and made since), so that the owner can release those whose
// snapshot is gone.
func (t *Tablet) Snapshots() []string { return t.holds.ids() }

// ReleaseSnapshot drops the hold id: the tablet's own files that only it
// kept are removed (when the write guard allows; otherwise they stay,
// garbage, never data loss), then its folder. Releasing a hold that does
// not exist does nothing. The caller makes sure the snapshot is gone: a
// released hold protects nothing.
func (t *Tablet) ReleaseSnapshot(id string) error {
	if err := manifest.ValidateHoldID(id); err != nil {
		return err
	}
	if t.closed.Load() {
		return ErrClosed
	}
	free := t.holds.drop(id)
	if len(free) > 0 && !t.mayDelete("remove sstables a released snapshot kept") {
		return fmt.Errorf("%w: release snapshot %s", ErrGuardRefused, id)
	}
	var errs []error
	for _, p := range free {
		if err := t.opts.FS.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The hold stays, naming files of which some are gone: the next
		// owner's release removes the rest.
		return fmt.Errorf("tablet: release snapshot %s of %s: %w", id, t.dir, errors.Join(errs...))
	}
	if !t.mayDelete("remove a released snapshot hold") {
		return fmt.Errorf("%w: release snapshot %s", ErrGuardRefused, id)
	}
	return manifest.RemoveHold(t.opts.FS, t.dir, id)
}
