package master

import (
	"context"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// UpdateSnapshot sets a ready snapshot's expire time: the Bigtable
// gateway's UpdateBackup (docs/GATEWAY.md "Backups"). The time is
// recorded and reported only; nothing deletes a snapshot when it passes
// (docs/CONTRACTS.md §4a).
func (s snapshotServer) UpdateSnapshot(ctx context.Context, req *tabulapb.UpdateSnapshotRequest) (*tabulapb.Snapshot, error) {
	out, err := s.m.updateSnapshot(ctx, req.GetName(), req.GetExpireUnixMicros())
	return out, toStatus(ctx, err)
}

func (m *Master) updateSnapshot(ctx context.Context, name string, expire int64) (*tabulapb.Snapshot, error) {
	if expire < 0 {
		return nil, cell.Invalidf("snapshot %s: expire time %d is before 1970", name, expire)
	}
	term, err := m.lead(ctx)
	if err != nil {
		return nil, err
	}
	r, err := m.findSnapshotAs(ctx, name, auth.Admin)
	if err != nil {
		return nil, err
	}
	if r.GetState() != meta.SnapshotReady {
		return nil, notReadyf("snapshot %s is %s, not ready", name, r.GetState())
	}
	r.ExpireUnixMicros = expire
	// Guarded by the record's revision: a delete or a clone since the read
	// fails it (UNAVAILABLE, retried), rather than being written over.
	if err := meta.PutSnapshotRecord(ctx, m.cli, m.layout, r.Snapshot, r.ModRevision, term.guard()); err != nil {
		return nil, err
	}
	m.log.Info("snapshot updated", "snapshot", name, "id", r.GetId(), "expire_unix_micros", expire)
	return r.Snapshot, nil
}
