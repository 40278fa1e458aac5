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

// gcUses is who, in one sweep, names each file: the manifests of the
// folders kept (holder "") and the live holds (holder: the snapshot id).
// Only gathered when some record is retired. A nil *gcUses ignores adds.
type gcUses struct {
	by   map[string]fileUse
	held map[string][]string // snapshot id -> the files its holds name
}

// fileUse is a file's first holder, and whether another names it too.
type fileUse struct {
	first string
	other bool
}

func newGCUses() *gcUses {
	return &gcUses{by: map[string]fileUse{}, held: map[string][]string{}}
}

// add records that holder names files.
func (u *gcUses) add(holder string, files []string) {
	if u == nil {
		return
	}
	for _, f := range files {
		f = filepath.Clean(f)
		if holder != "" {
			u.held[holder] = append(u.held[holder], f)
		}
		e, ok := u.by[f]
		switch {
		case !ok:
			u.by[f] = fileUse{first: holder}
		case e.first != holder && !e.other:
			e.other = true
			u.by[f] = e
		}
	}
}

// needed reports whether something besides the holds of id names a file
// those holds name.
func (u *gcUses) needed(id string) bool {
	for _, f := range u.held[id] {
		if e := u.by[f]; e.other || e.first != id {
			return true
		}
	}
	return false
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
		if rev > view.rev || uses.needed(id) {
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
