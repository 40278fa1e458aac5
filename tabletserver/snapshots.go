package tabletserver

import (
	"context"
	"errors"
	"slices"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// releaseDeadHolds releases the snapshot holds of the held tablets whose
// snapshot record is gone from etcd (docs/CONTRACTS.md §4a): the engine
// then removes the files only those holds kept. It runs with each round of
// the split loop, and reads etcd only when some tablet has holds.
//
// The holds are listed before the records are read, and a hold is written
// only after its record exists: so every listed hold's record was created
// before the read, and one the read does not find was deleted. A hold
// written after the listing is not looked at this round.
func (s *Server) releaseDeadHolds(ctx context.Context) {
	type heldHolds struct {
		h   *held
		ids []string
	}
	var withHolds []heldHolds
	for _, h := range s.heldTablets("") {
		if ids := h.t.Snapshots(); len(ids) > 0 {
			withHolds = append(withHolds, heldHolds{h, ids})
		}
	}
	if len(withHolds) == 0 {
		return
	}
	live, err := meta.ReadSnapshotIDs(ctx, s.etcd, s.layout)
	if err != nil {
		s.logger.Warn("reading snapshot records to release dead holds", "err", err)
		return
	}
	for _, w := range withHolds {
		for _, id := range w.ids {
			if _, found := slices.BinarySearch(live, id); found {
				continue
			}
			err := w.h.t.ReleaseSnapshot(id)
			switch {
			case err == nil:
				s.logger.Info("released the hold of a deleted snapshot", "table", w.h.table, "tablet", w.h.id, "snapshot", id)
			case !errors.Is(err, tablet.ErrClosed):
				s.logger.Warn("releasing the hold of a deleted snapshot", "table", w.h.table, "tablet", w.h.id, "snapshot", id, "err", err)
			}
		}
	}
}
