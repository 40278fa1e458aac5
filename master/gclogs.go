package master

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
)

// Garbage collection of shared commit logs.
//
// Each tablet server writes one shared log per lease, in
// <StorageRoot>/logs/<name>/ (meta.LogName). A log must stay while its
// server may still write it and while any tablet's manifest names it (the
// tablet's next owner replays its records from there). After a sweep of
// every table folder, the leader deletes a log only when all of these hold:
//
//  1. its name is one meta.LogName makes (other folders are not ours);
//  2. its lease is not the lease of any registered server (read in the
//     same etcd transaction as the tablets);
//  3. no manifest of a tablet folder the sweep kept names it, and every
//     manifest could be read (an unreadable one skips this step);
//  4. it and everything in it are older than Options.GCGrace: a server
//     creates its log before it registers, and an owner writes the
//     manifest naming its log after it attached to it;
//  5. this master is still the leader when it deletes.

// sweepLogs deletes the shared commit logs no server and no tablet needs;
// named holds the logs the kept manifests name.
func (m *Master) sweepLogs(ctx context.Context, term *leadership, view *gcView, named map[string]bool, now time.Time) (removed []string, err error) {
	fsys := m.fs()
	dir := storepath.Logs(m.opts.StorageRoot)
	entries, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("master: gc: %w", err)
	}
	cutoff := now.Add(-m.opts.GCGrace)
	var doomed []string
	for _, e := range entries {
		lease, ours := meta.LogLease(e.Name)
		switch {
		case !e.IsDir || !ours, view.leases[lease], named[e.Name]:
		case olderThan(fsys, filepath.Join(dir, e.Name), cutoff, true):
			doomed = append(doomed, filepath.Join(dir, e.Name))
		}
	}
	if len(doomed) == 0 {
		return nil, nil
	}
	if err := m.checkLeader(ctx, term); err != nil {
		return nil, err
	}
	return m.removeAged(term, doomed, "shared commit log no server or tablet needs", fsys.RemoveAll)
}
