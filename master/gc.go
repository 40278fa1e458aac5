package master

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/vfs"
)

// Garbage collection of tablet folders.
//
// Tablet servers keep each tablet in <StorageRoot>/tables/<table>/<id>/.
// After a split the children reference the parent's files until their
// compactions rewrite them; the splitting server deletes the parent's folder
// only while it still remembers the split (it forgets on restart). Folders
// of split children whose commit failed with an unknown outcome, and of
// tablets of deleted tables, are likewise left behind. The leader sweeps
// them every Options.GCInterval and deletes a tablet folder only when all
// of these hold:
//
//  1. no tablet record in etcd has its id (tablets/ is read at one
//     revision, in a transaction guarded by the leader's election key);
//  2. no folder that is kept references a file inside it: every live
//     tablet's folder, every fresh folder, and (transitively) every folder
//     kept because of a reference. manifest.References reads the references;
//     an unreadable manifest, or a live tablet's folder in which none is
//     listed (an object store's listing may lag behind it), keeps every
//     folder of that table;
//  3. the folder and everything inside it are older than Options.GCGrace:
//     a split in progress writes its children's folders before the etcd
//     transaction that names them commits;
//  4. this master is still the leader when it deletes;
//  5. no live snapshot holds it: a folder holding a hold whose record
//     (snapshots/<id>) the read found is kept, and the files the hold
//     references keep their folders as a kept tablet's manifest does
//     (docs/CONTRACTS.md §4a). A hold whose record is gone goes with its
//     folder. A live hold that cannot be read keeps every folder of the
//     table.
//
// And a retired snapshot record (deleted while it had clones, clone.go) is
// dropped, which makes its holds dead, only when the sweep read every
// manifest and hold (no table blocked), the record was retired at or
// before the sweep's read, and no file its holds name is named by
// anything else that may still be read: the manifest of a folder live in
// etcd or within the grace period, of any table, or a live hold not
// retired (rule 6; gcretired.go). A dead folder kept only for the files
// it holds is never served again, so its manifest does not count. Until then its holds keep, by rule 5 and
// every other deleter's, the files a clone's tablets name in the source
// table's folders. A clone committed before the retirement has its
// tablets in the read (the record's ModRevision guards the clone's
// transaction); their folders, read even when the listing lags, name the
// files for as long as they need them.
//
// An empty table folder is removed too when the table has neither a schema
// nor tablets in etcd and the folder was already older than the grace
// period before the sweep.

const (
	defaultGCInterval = 5 * time.Minute
	defaultGCGrace    = 10 * time.Minute
)

// gcResult is what one sweep did.
type gcResult struct {
	// removed lists the folders deleted, tablet folders and table folders.
	removed []string
	// blocked lists the tables whose folders were all kept because a
	// manifest could not be read.
	blocked []string
}

// gcTick sweeps (every GCInterval until the term ends).
func (m *Master) gcTick(ctx context.Context, term *leadership) {
	if _, err := m.sweep(ctx, term); err != nil && ctx.Err() == nil {
		m.log.Warn("gc: sweep of tablet folders failed", "err", err)
	}
}

// stillLeading reports whether term is the current term and not over.
func (m *Master) stillLeading(term *leadership) bool {
	if term.ctx.Err() != nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.leader == term
}

// gcView is etcd's tablet map and table set at one revision, as far as the
// sweep needs it.
type gcView struct {
	rev int64
	// ids holds every tablet id in etcd, of any table.
	ids map[string]bool
	// live holds the tablet ids in etcd of each table.
	live map[string][]string
	// tables holds every table with a schema or at least one tablet.
	tables map[string]bool
	// leases holds the lease of every registered tablet server.
	leases map[int64]bool
	// snapshots holds the id of every snapshot record: their holds are
	// live.
	snapshots map[string]bool
	// retired maps the retired snapshot records to their ModRevisions.
	retired map[string]int64
}

// readGCView reads tables/ and tablets/ at one revision, guarded by term.
func (m *Master) readGCView(ctx context.Context, term *leadership) (*gcView, error) {
	l := m.layout
	keys, err := meta.ReadGCKeys(ctx, m.cli, l, term.guard())
	if errors.Is(err, meta.ErrConflict) {
		return nil, ErrNotLeader
	}
	if err != nil {
		return nil, err
	}
	v := &gcView{rev: keys.Rev, ids: map[string]bool{}, live: map[string][]string{}, tables: map[string]bool{}, leases: map[int64]bool{}, snapshots: map[string]bool{}}
	v.retired = keys.Retired
	for _, id := range keys.SnapshotIDs {
		v.snapshots[id] = true
	}
	for _, lease := range keys.ServerLeases {
		v.leases[lease] = true
	}
	for _, k := range keys.TableKeys {
		if name, ok := l.TableFromKey(k); ok {
			v.tables[name] = true
		}
	}
	for _, k := range keys.TabletKeys {
		// The key names the tablet even when its value does not decode.
		table, id, ok := l.TabletFromKey(k)
		if !ok {
			return nil, fmt.Errorf("master: gc: unexpected key %q under tablets/; not sweeping", k)
		}
		v.ids[id] = true
		v.live[table] = append(v.live[table], id)
		v.tables[table] = true
	}
	return v, nil
}

// sweep makes one pass over <StorageRoot>/tables and deletes the folders
// no tablet needs any more (see the comment at the top of this file).
func (m *Master) sweep(ctx context.Context, term *leadership) (gcResult, error) {
	var res gcResult
	if m.opts.StorageRoot == "" {
		return res, nil
	}
	view, err := m.readGCView(ctx, term)
	if err != nil {
		return res, err
	}
	// The folders are listed after the read, so every folder of a tablet
	// created before the read is seen in its state at or after the read.
	root := filepath.Join(m.opts.StorageRoot, "tables")
	entries, err := m.fs().List(root)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("master: gc: %w", err)
	}
	now := time.Now()
	logs := map[string]bool{}
	var uses *gcUses
	if len(view.retired) > 0 {
		uses = newGCUses(view.retired)
	}
	for _, e := range entries {
		if !e.IsDir || cell.ValidateTableName(e.Name) != nil {
			continue // not a table folder of ours
		}
		if !m.stillLeading(term) {
			return res, ErrNotLeader
		}
		removed, blocked, err := m.sweepTable(ctx, term, view, e.Name, filepath.Join(root, e.Name), now, logs, uses)
		res.removed = append(res.removed, removed...)
		if blocked {
			res.blocked = append(res.blocked, e.Name)
		}
		if err != nil {
			return res, err
		}
	}
	if len(res.blocked) == 0 {
		// Only when every manifest was read: an unread one may name a log.
		removed, err := m.sweepLogs(ctx, term, view, logs, now)
		res.removed = append(res.removed, removed...)
		if err != nil {
			return res, err
		}
		if err := m.dropRetired(ctx, term, view, uses); err != nil {
			return res, err
		}
	}
	if len(res.removed) > 0 {
		m.log.Info("gc: sweep done", "removed", len(res.removed), "revision", view.rev)
	}
	return res, nil
}

// gcFolder is one tablet folder of a table during a sweep.
type gcFolder struct {
	name, dir string
	// keep is set for folders that must stay; refsRead once their
	// references have been added to the referenced set.
	keep, refsRead bool
	why            string
	// holds are the ids of the live snapshots' holds in the folder.
	holds []string
	// served is set for a folder a tablet serves or may serve: live in
	// etcd, or within the grace period (a split or a clone being made).
	// Only these manifests keep a retired snapshot (rule 6): a dead
	// folder kept for its held files would otherwise keep its hold.
	served bool
}

// sweepTable sweeps one table folder, adding to logs the shared commit
// logs the manifests of the folders it keeps name. blocked reports that an
// unreadable manifest kept every folder.
func (m *Master) sweepTable(ctx context.Context, term *leadership, view *gcView, table, dir string, now time.Time, logs map[string]bool, uses *gcUses) (removed []string, blocked bool, err error) {
	fsys := m.fs()
	tableOld := olderThan(fsys, dir, now.Add(-m.opts.GCGrace), false)
	entries, err := fsys.List(dir)
	if err != nil {
		return nil, false, fmt.Errorf("master: gc: %w", err)
	}
	cutoff := now.Add(-m.opts.GCGrace)
	var folders []*gcFolder
	for _, e := range entries {
		if !e.IsDir || strings.HasPrefix(e.Name, ".") {
			continue
		}
		f := &gcFolder{name: e.Name, dir: filepath.Join(dir, e.Name)}
		ids, err := manifest.ListHolds(fsys, f.dir)
		if err != nil {
			m.log.Error("gc: cannot list a tablet folder's snapshot holds; keeping every folder of the table",
				"table", table, "tablet", f.name, "err", err)
			return nil, true, nil
		}
		for _, id := range ids {
			if view.snapshots[id] {
				f.holds = append(f.holds, id)
			}
		}
		switch {
		case len(f.holds) > 0:
			f.keep, f.why = true, "held by a snapshot"
			// Whether it is served matters only to rule 6 (and costs a
			// walk of the folder).
			f.served = view.ids[f.name] || uses != nil && !olderThan(fsys, f.dir, cutoff, true)
		case view.ids[f.name]:
			f.keep, f.why, f.served = true, "live", true
		case !olderThan(fsys, f.dir, cutoff, true):
			f.keep, f.why, f.served = true, "within grace period", true
		}
		folders = append(folders, f)
	}
	// A live tablet's folder the listing does not show (an object
	// store's LIST may lag behind a split child's first objects) is read
	// all the same: what it references must stay.
	for _, id := range view.live[table] {
		if !slices.ContainsFunc(folders, func(f *gcFolder) bool { return f.name == id }) {
			folders = append(folders, &gcFolder{name: id, dir: filepath.Join(dir, id), keep: true, why: "live", served: true})
		}
	}

	// Mark every folder that a kept folder references, until nothing
	// changes: a kept folder's references must stay readable.
	var refs []string
	for changed := true; changed; {
		changed = false
		for _, f := range folders {
			if !f.keep || f.refsRead {
				continue
			}
			r, err := manifest.References(fsys, f.dir)
			if errors.Is(err, manifest.ErrNoTablet) && !view.ids[f.name] {
				// A fresh folder not in etcd without a manifest yet (a
				// split or merge being made): its parents are still in
				// etcd. A live one's manifest may only be missing from a
				// lagging listing: that blocks the table below.
				r, err = manifest.Refs{}, nil
			}
			if err != nil {
				m.log.Error("gc: cannot read a tablet manifest; keeping every folder of the table",
					"table", table, "tablet", f.name, "err", err)
				return nil, true, nil
			}
			if f.served {
				uses.add("", r.Files)
			}
			for _, id := range f.holds {
				held, err := manifest.HeldFiles(fsys, f.dir, id)
				if err != nil {
					m.log.Error("gc: cannot read a live snapshot hold; keeping every folder of the table",
						"table", table, "tablet", f.name, "snapshot", id, "err", err)
					return nil, true, nil
				}
				uses.add(id, held)
				r.Files = append(r.Files, held...)
			}
			f.refsRead = true
			refs = append(refs, r.Files...)
			if r.Log != "" {
				logs[r.Log] = true
			}
		}
		for _, f := range folders {
			if !f.keep && referencesInside(refs, f.dir) {
				f.keep, f.why, changed = true, "referenced by a kept tablet", true
			}
		}
	}

	var doomed []*gcFolder
	for _, f := range folders {
		switch {
		case !f.keep:
			doomed = append(doomed, f)
		case !view.ids[f.name]:
			m.log.Debug("gc: keeping tablet folder not in etcd", "table", table, "tablet", f.name, "why", f.why)
		}
	}
	if len(doomed) == 0 && !(tableOld && !view.tables[table]) {
		return nil, false, nil
	}
	// Ask etcd once more that this term still leads before deleting.
	if err := m.checkLeader(ctx, term); err != nil {
		return nil, false, err
	}
	dirs := make([]string, len(doomed))
	for i, f := range doomed {
		dirs[i] = f.dir
	}
	removed, err = m.removeAged(term, dirs, "tablet folder no tablet needs", func(dir string) error {
		return storepath.RemoveTabletDir(fsys, m.opts.StorageRoot, dir)
	})
	if err != nil {
		return removed, false, err
	}
	if tableOld && !view.tables[table] && m.stillLeading(term) {
		// Remove fails, harmlessly, if the folder is not empty.
		if err := fsys.Remove(dir); err == nil {
			m.log.Info("gc: removed folder of a table that no longer exists", "table", table, "dir", dir)
			removed = append(removed, dir)
		}
	}
	return removed, false, nil
}

// removeAged deletes each of paths, in order, with remove, while term
// leads, looking once more just before each deletion that everything in it
// is older than the grace period (a path that got younger is kept).
// Failures are logged and skipped. what names the paths in the log.
func (m *Master) removeAged(term *leadership, paths []string, what string, remove func(path string) error) (removed []string, err error) {
	fsys := m.fs()
	slices.Sort(paths)
	for _, p := range paths {
		if !m.stillLeading(term) {
			return removed, ErrNotLeader
		}
		if !olderThan(fsys, p, time.Now().Add(-m.opts.GCGrace), true) {
			continue
		}
		if err := remove(p); err != nil {
			m.log.Warn("gc: removing "+what, "path", p, "err", err)
			continue
		}
		m.log.Info("gc: removed "+what, "path", p)
		removed = append(removed, p)
	}
	return removed, nil
}

// checkLeader asks etcd whether term's election key still exists.
func (m *Master) checkLeader(ctx context.Context, term *leadership) error {
	err := meta.CheckGuard(ctx, m.cli, term.guard())
	if errors.Is(err, meta.ErrConflict) {
		return ErrNotLeader
	}
	return err
}

// referencesInside reports whether any of refs lies inside dir.
func referencesInside(refs []string, dir string) bool {
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	for _, r := range refs {
		if strings.HasPrefix(filepath.Clean(r), prefix) {
			return true
		}
	}
	return false
}

// olderThan reports whether path was last modified before cutoff and,
// when deep, so was everything inside it. Anything it cannot read counts as
// new, so that it is kept. Symbolic links are looked at, not followed.
func olderThan(fsys vfs.FS, path string, cutoff time.Time, deep bool) bool {
	info, err := fsys.Stat(path)
	if err != nil || !info.ModTime.Before(cutoff) {
		return false
	}
	if !deep || !info.IsDir() {
		return true
	}
	entries, err := fsys.List(path)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !olderThan(fsys, filepath.Join(path, e.Name), cutoff, true) {
			return false
		}
	}
	return true
}

// fs is the file system of the storage root.
func (m *Master) fs() vfs.FS { return vfs.Or(m.opts.FS) }
