package tabletserver

import (
	"context"
	"errors"
	"slices"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/manifest"
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

// snapshotServer serves TabletSnapshots (api/tabulapb/snapshot.proto), the
// master's calls that take a snapshot's holds.
type snapshotServer struct {
	tabulapb.UnimplementedTabletSnapshotsServer
	s *Server
}

// HoldTablet flushes the tablet and saves the snapshot's hold of its
// files (tablet.Snapshot). The master wrote the snapshot's record before
// the call, so releaseDeadHolds never takes the hold for a dead one.
func (ss snapshotServer) HoldTablet(ctx context.Context, req *tabulapb.HoldTabletRequest) (*tabulapb.HoldTabletResponse, error) {
	ref := req.GetTablet()
	h, err := ss.s.resolve(ref, nil)
	var st manifest.State
	if err == nil {
		st, err = h.t.Snapshot(ctx, req.GetSnapshotId())
	}
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	out := &tabulapb.HoldTabletResponse{Files: uint64(len(st.Files))}
	for _, f := range st.Files {
		out.Bytes += f.Size
	}
	ss.s.logger.Info("snapshot hold taken", "table", h.table, "tablet", h.id, "snapshot", req.GetSnapshotId(), "files", out.Files, "bytes", out.Bytes)
	return out, nil
}
