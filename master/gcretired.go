package master

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"

	"github.com/tabuladb/tabula/meta"
)

// Retired snapshots (gc.go, rule 6): a snapshot deleted while it had
// clones keeps its record and holds until no one else names its files.

// gcUses is what, in one sweep, names each file: the manifests of the
// folders kept and the live holds that are not retired. The files the
// retired records' holds name are gathered apart. Only made when some
// record is retired; a nil *gcUses ignores adds.
//
// A retired record's holds do not count as a use of another's files: a
// retired record stays only for what its clones' manifests (and live
// holds) name, which count themselves; so two retired records naming one
// file (a snapshot of a clone and the clone's source snapshot) do not keep
// each other for ever.
type gcUses struct {
	retired map[string]int64
	named   map[string]bool
	held    map[string][]string // retired snapshot id -> the files its holds name
}

func newGCUses(retired map[string]int64) *gcUses {
	return &gcUses{retired: retired, named: map[string]bool{}, held: map[string][]string{}}
}

// add records that holder (a snapshot id, or "" for a manifest) names
// files.
func (u *gcUses) add(holder string, files []string) {
	if u == nil {
		return
	}
	_, retired := u.retired[holder]
	for _, f := range files {
		f = filepath.Clean(f)
		if retired {
			u.held[holder] = append(u.held[holder], f)
		} else {
			u.named[f] = true
		}
	}
}

// needed returns a file the holds of the retired record id name that a
// manifest or a live hold that is not retired names too ("" if none).
func (u *gcUses) needed(id string) string {
	for _, f := range u.held[id] {
		if u.named[f] {
			return f
		}
	}
	return ""
}

// dropRetired deletes the retired records whose files nothing else the
// sweep kept names. Called only after a sweep that read every manifest and
// hold (none blocked): an unread manifest may name their files.
func (m *Master) dropRetired(ctx context.Context, term *leadership, view *gcView, uses *gcUses) error {
	if uses == nil {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(view.retired)) {
		rev := view.retired[id]
		if rev > view.rev {
			continue
		}
		if f := uses.needed(id); f != "" {
			m.log.Debug("gc: keeping a retired snapshot: a clone names its files", "snapshot", id, "file", f)
			continue
		}
		if !m.stillLeading(term) {
			return ErrNotLeader
		}
		err := meta.DropRetiredSnapshot(ctx, m.cli, m.layout, id, rev, term.guard())
		if errors.Is(err, meta.ErrConflict) {
			continue // changed since the read: the next sweep looks again
		}
		if err != nil {
			return err
		}
		m.log.Info("gc: dropped a retired snapshot no clone needs any more", "snapshot", id)
	}
	return nil
}
