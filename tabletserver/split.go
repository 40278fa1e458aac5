package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs"
)

// Splits are decided by the server (docs/CONTRACTS.md §4):
//
//  1. mark the parent splitting (data calls get NotServing; clients retry)
//     and read its etcd record with its ModRevision, checking that it is
//     still assigned here at the held epoch;
//  2. tablet.Split into two new folders (fresh meta.NewTabletID ids); the
//     engine flushes the parent, writes the children's manifests (they
//     reference the parent's files) and closes the parent;
//  3. meta.CommitSplit: one etcd transaction, guarded by the parent's
//     ModRevision, deletes the parent and puts both children assigned here
//     at epoch parent.Epoch+1;
//  4. on success open both children and serve them; on conflict remove the
//     children's folders and reopen the parent if etcd still assigns it
//     here at its epoch;
//  5. when the commit's answer is lost (a timeout: it may have committed,
//     or still be on its way to etcd), settle it with meta.FenceSplit, a
//     transaction under the split's own guard that makes a late commit
//     impossible and tells whether it committed; then go on as in 4. If
//     even the fence gets no answer, keep the children's folders (etcd
//     may name them) and stop serving the parent for good at its epoch
//     (dropUnsettled); the master then sorts it out (see dropUnsettled).
//
// The parent's folder is deleted later, once no tablet of the table
// references its files (collectParents).

// splitCommitTimeout bounds the etcd work of a split once the engine has
// split: it runs even if the caller's context is cancelled, so the outcome
// is known.
const splitCommitTimeout = 10 * time.Second

// settleTimeout bounds how long a split or merge whose commit answer was
// lost keeps sending its fence before it leaves the outcome to the master
// (settle). A var for tests.
var settleTimeout = splitCommitTimeout

// splitParent is a split parent whose folder waits until no tablet
// references its files.
type splitParent struct {
	table, dir string
}

// splitWhy says why a split is made, for its log line and its children.
type splitWhy struct {
	reason string // "request" (SplitTablet), "size" or "load"
	attrs  []any  // more attributes for the log line
	// childrenQuiet: the children make no load split before this
	// load-window time (hotState.quietUntil).
	childrenQuiet time.Time
}

// split splits h at row (or at its SplitKey when row is empty), as asked
// by a SplitTablet call, and returns the children's records.
func (s *Server) split(ctx context.Context, h *held, row []byte) ([]meta.TabletRecord, error) {
	return s.splitAs(ctx, h, row, splitWhy{reason: "request"})
}

// splitAs is split for the reason why.
func (s *Server) splitAs(ctx context.Context, h *held, row []byte, why splitWhy) (_ []meta.TabletRecord, err error) {
	begin := time.Now()
	key := tabletKey(h.table, h.id)
	unlock := s.keys.lock(key)
	defer unlock()
	s.mu.RLock()
	cur, gen := s.tablets[key], s.gen.Load()
	s.mu.RUnlock()
	if cur != h || !h.splitting.CompareAndSwap(false, true) {
		return nil, notServing(h.table, h.id, row, "tablet is no longer served here")
	}
	parentClosed := false
	defer func() {
		if err != nil && !parentClosed {
			h.splitting.Store(false)
		}
	}()

	start, end := h.t.Range()
	if len(row) == 0 {
		row, err = h.t.SplitKey()
		if errors.Is(err, tablet.ErrNoSplitKey) && h.t.Stats().MemtableBytes > 0 {
			// The split key comes from SSTable indexes: flush and look again.
			if err = h.t.Flush(ctx); err == nil {
				row, err = h.t.SplitKey()
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if !inside(row, start, end) {
		return nil, cell.Invalidf("split row %q is not strictly inside the tablet's range [%q, %q)", row, start, end)
	}
	parent, err := meta.GetTablet(ctx, s.etcd, s.layout, h.table, h.id)
	if err != nil {
		return nil, err
	}
	if parent.Server != s.id || parent.Epoch != h.epoch || parent.Lease != s.leaseID.Load() {
		return nil, fmt.Errorf("%w: etcd assigns tablet %s to %q at epoch %d under lease %x", ErrNotAssigned, key, parent.Server, parent.Epoch, parent.Lease)
	}
	left := parent.TabletRecord
	left.ID, left.End = meta.NewTabletID(), row
	right := parent.TabletRecord
	right.ID, right.Start = meta.NewTabletID(), row
	for _, c := range []*meta.TabletRecord{&left, &right} {
		c.State, c.Server, c.Address, c.Epoch, c.Parent = meta.StateAssigned, s.id, s.addr, parent.Epoch+1, parent.ID
	}
	// Hold the children's key locks from before the commit until they are
	// served: once the commit is visible the master may send LoadTablet for
	// a child, which must find it held, not open a second engine on its
	// folder.
	defer s.keys.lock(tabletKey(left.Table, left.ID))()
	defer s.keys.lock(tabletKey(right.Table, right.ID))()
	leftDir, err := s.tabletPath(h.table, left.ID)
	if err != nil {
		return nil, err
	}
	rightDir, err := s.tabletPath(h.table, right.ID)
	if err != nil {
		return nil, err
	}
	removeChildren := func() {
		for _, d := range []string{leftDir, rightDir} {
			if err := storepath.RemoveTabletDir(s.fs(), s.opts.DataDir, d); err != nil {
				s.logger.Warn("removing split child folder", "dir", d, "err", err)
			}
		}
	}

	parentClosed = true // tablet.Split closes the parent whether or not it succeeds
	if err := h.t.Split(ctx, row, leftDir, rightDir); err != nil {
		removeChildren()
		s.reopenParent(h, gen)
		return nil, fmt.Errorf("tabletserver: splitting tablet %s: %w", key, err)
	}

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), splitCommitTimeout)
	defer cancel()
	err = meta.CommitSplit(cctx, s.etcd, s.layout, parent.ModRevision, parent.TabletRecord, left, right)
	if err != nil && !errors.Is(err, meta.ErrConflict) {
		// The transaction may have committed, or may still: settle it.
		outcome, ferr := s.settle(ctx, func(ctx context.Context) (meta.Outcome, error) {
			return meta.FenceSplit(ctx, s.etcd, s.layout, parent.ModRevision, parent.TabletRecord, left, right)
		})
		switch outcome {
		case meta.Committed:
			err = nil
		case meta.Unknown:
			// Keep the children's folders (etcd may name them) and never
			// serve the parent at this epoch again.
			s.dropUnsettled(h)
			return nil, fmt.Errorf("tabletserver: split of %s: outcome unknown (%v): %w", key, ferr, err)
		}
	}
	if err != nil {
		removeChildren()
		s.reopenParent(h, gen)
		return nil, fmt.Errorf("tabletserver: committing split of %s: %w", key, err)
	}
	// One line per split for the operator and the status page's events
	// (they collect lines with an "event" attribute).
	attrs := []any{"event", "split", "reason", why.reason, "table", h.table, "tablet", h.id, "row", logKey(row),
		"left", left.ID, "right", right.ID}
	attrs = append(attrs, why.attrs...)
	s.logger.Info("split tablet", append(attrs, "duration", time.Since(begin).Round(time.Millisecond))...)
	s.counters.splits.Add(1)
	if s.testHookSplitCommitted != nil {
		s.testHookSplitCommitted(left, right)
	}

	// Open both children, then swap them for the parent in one step, so
	// the served set never lacks the range.
	fams, err := s.familiesOf(h.table)
	var opened []*held
	for _, c := range []struct {
		rec meta.TabletRecord
		dir string
	}{{left, leftDir}, {right, rightDir}} {
		if err != nil {
			break
		}
		t, oerr := s.openEngine(c.dir, fams, c.rec.Start, c.rec.End, c.rec.Epoch, false)
		if oerr != nil {
			err = fmt.Errorf("tabletserver: opening split child %s: %w", c.rec.ID, oerr)
			break
		}
		ch := &held{table: h.table, id: c.rec.ID, epoch: c.rec.Epoch, dir: c.dir, t: t}
		ch.hot.quietUntil = why.childrenQuiet
		opened = append(opened, ch)
	}
	installed := s.install(gen, nil, []*held{h}, opened...) == nil
	s.collectLater(splitParent{table: h.table, dir: h.dir})
	h.t.Close()
	if !installed {
		return []meta.TabletRecord{left, right}, nil // fenced or closing: the master reassigns them
	}
	if err != nil {
		// The split is committed; a child this server failed to open is
		// handed back to the master.
		s.logger.Error("serving split children", "tablet", key, "err", err)
		s.releaseChildren(cctx, left, right)
	}
	return []meta.TabletRecord{left, right}, nil
}

// errUnknowable is why a fenced commit's outcome cannot be told: etcd no
// longer holds the keys it deletes nor those it creates.
var errUnknowable = errors.New("tabletserver: etcd holds neither the parents nor the tablets the commit creates")

// settle sends fence (meta.FenceSplit or meta.FenceMerge) for a commit
// whose answer was lost, again while the fence's own answer is lost
// (a fence is idempotent under its guards), until it answers or
// settleTimeout passes. Unknown comes with the reason: the fence's last
// error (etcd did not answer in time), or errUnknowable (the commit can no
// longer land, but whether it did cannot be told). Either way the caller
// keeps what the commit may have published.
func (s *Server) settle(ctx context.Context, fence func(context.Context) (meta.Outcome, error)) (meta.Outcome, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		outcome, err := fence(ctx)
		if err == nil && outcome == meta.Unknown {
			return outcome, errUnknowable
		}
		if err == nil {
			return outcome, nil
		}
		select {
		case <-ctx.Done():
			return meta.Unknown, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// dropUnsettled stops serving a split or merge parent whose commit may
// still land, and refuses its epoch for good (as a confirmed unload does),
// so no LoadTablet at that epoch serves it again while the commit may land
// on its key. The master, refused, takes the parent back and gives it out
// at a new epoch through meta.Assign, whose transaction is guarded by the
// parent key's ModRevision: the very guard of the split's (and merge's)
// transaction. So once that reassignment commits the late commit can never
// land, and if the commit lands first the reassignment conflicts and the
// master finds the children (or the merged tablet) instead; their folders
// are kept here for that (an orphan is the master's sweep's, master/gc.go).
func (s *Server) dropUnsettled(h *held) {
	s.mu.Lock()
	s.noteUnloadedLocked(tabletKey(h.table, h.id), h.epoch)
	s.mu.Unlock()
	s.dropHeld(h)
}

// releaseChildren marks split children this server does not serve as
// unassigned, so the master assigns them again.
func (s *Server) releaseChildren(ctx context.Context, children ...meta.TabletRecord) {
	for _, c := range children {
		s.mu.RLock()
		_, served := s.tablets[tabletKey(c.Table, c.ID)]
		s.mu.RUnlock()
		if served {
			continue
		}
		vt, err := meta.GetTablet(ctx, s.etcd, s.layout, c.Table, c.ID)
		if err != nil || vt.Server != s.id || vt.Epoch != c.Epoch {
			continue
		}
		if _, err := meta.Update(ctx, s.etcd, s.layout, vt, meta.Unassigned(vt.TabletRecord)); err != nil {
			s.logger.Warn("releasing split child", "tablet", c.ID, "err", err)
		}
	}
}

// dropHeld removes h from the served set if it is still there.
func (s *Server) dropHeld(h *held) {
	key := tabletKey(h.table, h.id)
	s.mu.Lock()
	if s.tablets[key] == h {
		delete(s.tablets, key)
	}
	s.mu.Unlock()
	h.t.Close()
}

// reopenParent serves a split parent again after a failed split, if etcd
// still assigns it here at its epoch; otherwise it stops serving it.
func (s *Server) reopenParent(h *held, gen uint64) {
	s.dropHeld(h)
	ctx, cancel := context.WithTimeout(context.Background(), splitCommitTimeout)
	defer cancel()
	vt, err := meta.GetTablet(ctx, s.etcd, s.layout, h.table, h.id)
	if err != nil || vt.Server != s.id || vt.Epoch != h.epoch {
		s.logger.Warn("not reopening split parent", "tablet", h.id, "err", err)
		return
	}
	fams, err := s.familiesOf(h.table)
	if err != nil {
		s.logger.Error("reopening split parent", "tablet", h.id, "err", err)
		return
	}
	t, err := s.openEngine(h.dir, fams, vt.Start, vt.End, h.epoch, false)
	if err != nil {
		s.logger.Error("reopening split parent", "tablet", h.id, "err", err)
		return
	}
	if err := s.install(gen, nil, nil, &held{table: h.table, id: h.id, epoch: h.epoch, dir: h.dir, t: t}); err != nil {
		s.logger.Warn("reopening split parent", "tablet", h.id, "err", err)
	}
}

// splitLoop runs checkSplits every SplitCheckInterval until ctx is done.
func (s *Server) splitLoop(ctx context.Context) {
	ticker := time.NewTicker(s.opts.SplitCheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		s.checkSplits(ctx)
	}
}

// checkSplits is one round of the split loop: it splits the tablets past
// their table's size threshold at their size midpoint, and those hot for
// long enough where their load is halved (hotsplit.go), deletes split
// parents' folders no longer referenced, and releases the holds of deleted
// snapshots (snapshots.go). It returns how many tablets it
// split. Tests call it directly (with the loop disabled) to drive
// splitting round by round.
func (s *Server) checkSplits(ctx context.Context) (splits int) {
	if !s.Serving() {
		return 0
	}
	for _, h := range s.heldTablets("") {
		if ctx.Err() != nil {
			return splits
		}
		if h.splitting.Load() {
			continue
		}
		// A tablet with compaction backlog may still reference its
		// parent's files, whose whole size Stats counts: wait until
		// compaction has rewritten them (HBase likewise splits no region
		// that holds references).
		st := h.t.Stats()
		if st.CompactionBacklog > 0 || int64(st.SizeBytes) <= s.splitThreshold(h.table) {
			// Not due by size; maybe by load, which references to parent
			// files do not distort.
			if s.checkLoadSplit(ctx, h) {
				splits++
			}
			continue
		}
		_, err := s.splitAs(ctx, h, nil, splitWhy{reason: "size", attrs: []any{"bytes", st.SizeBytes}})
		switch {
		case err == nil:
			splits++
		case !errors.Is(err, tablet.ErrNoSplitKey):
			s.logger.Warn("automatic split", "table", h.table, "tablet", h.id, "err", err)
		}
	}
	s.collectParents()
	s.releaseDeadHolds(ctx)
	return splits
}

// collectLater records split or merge parents whose folders
// collectParents deletes once no tablet references their files.
func (s *Server) collectLater(ps ...splitParent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parents = append(s.parents, ps...)
}

// collectParents deletes the folders of split parents that no tablet
// folder of their table references any more.
func (s *Server) collectParents() {
	s.mu.Lock()
	parents := s.parents
	s.parents = nil
	s.mu.Unlock()
	var keep []splitParent
	for _, p := range parents {
		referenced, err := s.referenced(p)
		if err != nil || referenced {
			keep = append(keep, p)
			continue
		}
		// A snapshot's hold in any folder of the table (the parent's own,
		// or a child's naming the parent's files) may be live: the server
		// does not read what holds reference, the master's GC does
		// (docs/CONTRACTS.md §4a).
		if held, err := s.tableHasHolds(filepath.Dir(p.dir)); err != nil || held {
			s.logger.Info("leaving a parent folder to the master's GC: its table has snapshot holds", "dir", p.dir, "err", err)
			continue
		}
		if err := storepath.RemoveTabletDir(s.fs(), s.opts.DataDir, p.dir); err != nil {
			s.logger.Warn("removing split parent folder", "dir", p.dir, "err", err)
			keep = append(keep, p)
			continue
		}
		s.logger.Info("removed split parent folder", "dir", p.dir)
	}
	s.collectLater(keep...)
}

// referenced reports whether any other tablet folder of p's table
// references a file inside p's folder.
func (s *Server) referenced(p splitParent) (bool, error) {
	tableDir := filepath.Dir(p.dir)
	entries, err := s.fs().List(tableDir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		dir := filepath.Join(tableDir, e.Name)
		if !e.IsDir || dir == p.dir {
			continue
		}
		refs, err := manifest.Referenced(s.fs(), dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return false, err
		}
		for _, r := range refs {
			if !filepath.IsAbs(r) {
				r = filepath.Join(dir, r)
			}
			if strings.HasPrefix(filepath.Clean(r), p.dir+string(filepath.Separator)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// tableHasHolds reports whether some tablet folder in the table folder
// tableDir holds a snapshot hold.
func (s *Server) tableHasHolds(tableDir string) (bool, error) {
	entries, err := s.fs().List(tableDir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !e.IsDir {
			continue
		}
		if held, err := manifest.HasHolds(s.fs(), filepath.Join(tableDir, e.Name)); err != nil || held {
			return true, err
		}
	}
	return false, nil
}

// fs is the file system of the storage root.
func (s *Server) fs() vfs.FS { return vfs.Or(s.opts.FS) }
