package tablet

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
)

// Merge replaces two adjacent tablets by one tablet in dir covering
// [left.Start, right.End): left's range must end exactly where right's
// begins. It blocks writes on both, flushes both, and writes in dir a
// manifest whose files are references to both parents' files, each
// bounded to its parent's range (no data is copied); then it closes both
// parents, whether or not it succeeds. The parents' folders are left
// intact: delete them only when no tablet references their files (see
// manifest.Referenced). The merged manifest is written at the higher of the two
// parents' epochs; open the merged tablet at a later epoch, which seals it,
// and its first compactions rewrite the references into files of its own.
//
// Reads of the merged tablet see exactly the union of the parents: every
// row lies in one parent's range and is read only from that parent's
// files (their bounds), so cells of the two never meet, and the merged
// tablet's LastSeq is the higher of the two, so its own writes come after
// every cell of both.
func Merge(ctx context.Context, left, right *Tablet, dir string) (err error) {
	if left == right {
		return cell.Invalidf("merge needs two different tablets")
	}
	if left.end == nil || !bytes.Equal(left.end, right.start) {
		return cell.Invalidf("tablets [%q, %q) and [%q, %q) are not adjacent (left's end must be right's start)", left.start, left.end, right.start, right.end)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("tablet: %w", err)
	}
	var abs [2]string
	for i, t := range []*Tablet{left, right} {
		if abs[i], err = filepath.Abs(t.dir); err != nil {
			return fmt.Errorf("tablet: %w", err)
		}
		if abs[i] == absDir {
			return cell.Invalidf("the merged tablet's folder must differ from its parents'")
		}
	}
	if _, found, err := manifest.Load(left.opts.FS, dir); err != nil || found {
		return cell.Invalidf("merge folder %s already holds a tablet", dir)
	}
	// Both parents are closed on every return from here on, as Split
	// closes its parent: the caller reopens them if it needs them.
	// Gates are taken left then right: tablets of one table are ordered by
	// range, so two merges sharing a tablet take its gate in one order.
	left.gate.Lock()
	defer left.gate.Unlock()
	right.gate.Lock()
	defer right.gate.Unlock()
	defer func() {
		for _, t := range []*Tablet{left, right} {
			if cerr := t.closeGated(); cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for _, t := range []*Tablet{left, right} {
		if t.closed.Load() {
			return ErrClosed
		}
		t.flushMu.Lock()
		err := t.flushAllLocked(ctx)
		t.flushMu.Unlock()
		if err != nil {
			return err
		}
	}
	// No compaction may change the files while the merged manifest copies
	// the lists; the parents are marked closed before compactMu is let go,
	// so none starts afterwards (the merged tablet owns references to
	// their files from then on).
	left.compactMu.Lock()
	right.compactMu.Lock()
	defer func() {
		left.closed.Store(true)
		right.closed.Store(true)
		right.compactMu.Unlock()
		left.compactMu.Unlock()
	}()
	st := manifest.State{RangeStart: bytes.Clone(left.start), RangeEnd: bytes.Clone(right.end),
		Parent: filepath.Base(abs[0]) + "+" + filepath.Base(abs[1])}
	epoch := max(left.opts.Epoch, right.opts.Epoch)
	for i, t := range []*Tablet{left, right} {
		t.editMu.Lock()
		v, verr := t.currentVersion()
		st.LastSeq = max(st.LastSeq, t.flushedSeq)
		st.NextFileNum = max(st.NextFileNum, t.nextFileNum)
		t.editMu.Unlock()
		if verr != nil {
			return verr
		}
		refs, rerr := boundedRefs(abs[i], absDir, v, t.start, t.end)
		v.unref()
		if rerr != nil {
			return fmt.Errorf("tablet: merge: %w", rerr)
		}
		st.Files = append(st.Files, refs...)
	}
	if err := left.opts.FS.MkdirAll(dir); err != nil {
		return fmt.Errorf("tablet: merge: %w", err)
	}
	for _, t := range []*Tablet{left, right} {
		if err := t.checkGuard("write merged manifest"); err != nil {
			return err
		}
	}
	if err := manifest.SaveEpoch(left.opts.FS, dir, epoch, left.opts.manifestState(st)); err != nil {
		_ = manifest.Remove(left.opts.FS, dir, epoch)
		return fmt.Errorf("tablet: merge: write merged manifest: %w", err)
	}
	return nil
}
