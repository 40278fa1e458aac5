package master

import (
	"context"
	"errors"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// Snapshot expiry (docs/CONTRACTS.md §4a): a snapshot may carry an expire
// time, set at create or by UpdateSnapshot (the Bigtable gateway's
// UpdateBackup, docs/GATEWAY.md "Backups"). The leader's sweep, in the
// backup schedules' loop, deletes the ready snapshots whose time has
// passed by the rules of DeleteSnapshot: one with clones retires.

// UpdateSnapshot sets a ready snapshot's expire time.
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

// expireSnapshots deletes the ready snapshots whose expire time is at or
// before the clock's now, and returns how many it deleted or retired. A
// deposed leader deletes nothing (the term's guard fails every write); a
// record changed since the read is left to the next round.
func (m *Master) expireSnapshots(ctx context.Context, term *leadership) int {
	if !m.stillLeading(term) {
		return 0
	}
	recs, err := meta.ListSnapshotRecords(ctx, m.cli, m.layout)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("snapshot expiry: reading the records", "err", err)
		}
		return 0
	}
	now := m.opts.now().UnixMicro()
	n := 0
	for _, r := range recs {
		e := r.GetExpireUnixMicros()
		if r.GetState() != meta.SnapshotReady || e == 0 || e > now {
			continue
		}
		if err := m.dropSnapshot(ctx, term, r); err != nil {
			if !errors.Is(err, meta.ErrConflict) && ctx.Err() == nil {
				m.log.Warn("snapshot expiry: deleting an expired snapshot", "snapshot", r.GetName(), "err", err)
			}
			continue
		}
		m.log.Info("snapshot expired", "snapshot", r.GetName(), "id", r.GetId(), "table", r.GetTable(), "expire_unix_micros", e)
		n++
	}
	return n
}
