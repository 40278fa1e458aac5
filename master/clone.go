package master

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
)

// Clones and restores of snapshots (docs/CONTRACTS.md §4a).
//
// A clone is a table adopted (adopt.go) from a snapshot's holds: one
// tablet per hold, whose first manifest is the hold's with its paths
// rebased into the new folder (manifest.SaveClone), so it names the held
// files where they lie and nothing is copied. The transaction creating the
// table also adds it to the snapshot record's clones, guarded by the
// record's ModRevision: a snapshot deleted meanwhile fails the clone.
//
// What keeps the shared files: the snapshot's holds, for as long as its
// record exists. Deleting a snapshot that has clones only retires it (its
// name is freed, its record and holds stay); the GC drops a retired record
// once no folder it keeps, and no other live hold, names a file the
// retired snapshot holds (gc.go, rule 6). Until then every deleter of the
// source table honours the holds as for any snapshot, and a clone's own
// engines never remove a file outside their folders (manifest.IsOwnPath).

// CloneSnapshot creates a table from a snapshot.
func (s snapshotServer) CloneSnapshot(ctx context.Context, req *tabulapb.CloneSnapshotRequest) (*tabulapb.CloneSnapshotResponse, error) {
	schema, n, err := s.m.cloneSnapshot(ctx, req.GetName(), req.GetTable(), auth.Read)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.CloneSnapshotResponse{Schema: schema, Tablets: uint32(n)}, nil
}

// cloneSnapshot clones the snapshot name into the new table; the caller
// needs role on the snapshot's table. It returns the new table's schema
// and its number of tablets.
func (m *Master) cloneSnapshot(ctx context.Context, name, table string, role auth.Role) (*tabulapb.TableSchema, int, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return nil, 0, err
	}
	var last error
	for range snapshotAttempts {
		schema, n, err := m.tryClone(ctx, name, table, role)
		if err == nil || !errors.Is(err, meta.ErrConflict) || ctx.Err() != nil {
			return schema, n, err
		}
		last = err // the record changed (another clone): read it again
	}
	return nil, 0, fmt.Errorf("%w: clone of snapshot %s: its record kept changing (%d attempts); retry: %w", ErrNotReady, name, snapshotAttempts, last)
}

func (m *Master) tryClone(ctx context.Context, name, table string, role auth.Role) (*tabulapb.TableSchema, int, error) {
	term, err := m.lead(ctx)
	if err != nil {
		return nil, 0, err
	}
	if err := m.adoptableName(ctx, table); err != nil {
		return nil, 0, err
	}
	a, err := m.prepareClone(ctx, name, table, role)
	if err != nil {
		return nil, 0, err
	}
	if err := m.commitAdopt(ctx, term, a); err != nil {
		return nil, 0, err
	}
	m.log.Info("snapshot cloned", "snapshot", name, "table", table, "tablets", len(a.recs))
	return a.schema, len(a.recs), nil
}

// prepareClone reads the snapshot name (role on its table needed, and
// ready) and writes the folders of its clone into table (adoption step
// 1); the commit adds table to the record's clones, guarded by the
// record's revision of this read.
func (m *Master) prepareClone(ctx context.Context, name, table string, role auth.Role) (*adoption, error) {
	r, err := m.findSnapshotAs(ctx, name, role)
	if err != nil {
		return nil, err
	}
	if r.GetState() != meta.SnapshotReady {
		return nil, notReadyf("snapshot %s is still being created", name)
	}
	schema := cloneSchema(r.GetSchema())
	schema.Name, schema.State = table, ""
	fsys := m.fs()
	tablets := make([]adoptTablet, len(r.GetTablets()))
	for i, t := range r.GetTablets() {
		src, err := storepath.Tablet(m.opts.StorageRoot, r.GetTable(), t.GetTabletId())
		if err != nil {
			return nil, err
		}
		tablets[i] = adoptTablet{start: t.GetStartKey(), end: t.GetEndKey(), write: func(dir string) error {
			_, err := manifest.SaveClone(fsys, src, r.GetId(), dir)
			return err
		}}
	}
	snap := proto.Clone(r.Snapshot).(*tabulapb.Snapshot)
	if !slices.Contains(snap.Clones, table) {
		snap.Clones = append(snap.Clones, table)
	}
	return m.prepareAdopt(schema, tablets, func(ctx context.Context, tr meta.TableRecord, recs []meta.TabletRecord, g meta.Guard) error {
		return meta.CloneTable(ctx, m.cli, m.layout, tr, recs, snap, r.ModRevision, g)
	})
}

// RestoreSnapshot puts a snapshot's table back to it.
func (s snapshotServer) RestoreSnapshot(ctx context.Context, req *tabulapb.RestoreSnapshotRequest) (*tabulapb.RestoreSnapshotResponse, error) {
	out, err := s.m.restoreSnapshot(ctx, req.GetName())
	return out, toStatus(ctx, err)
}

// safetySnapshotName names the snapshot a restore takes first, as HBase's
// failsafe snapshot: "failsafe-<snapshot>-<UTC time>", the snapshot's
// name cut to fit the 100 characters of a name.
func safetySnapshotName(snapshot string, now time.Time) string {
	ts := now.UTC().Format("20060102T150405.000Z")
	const prefix = "failsafe-"
	if n := 100 - len(prefix) - 1 - len(ts); len(snapshot) > n {
		snapshot = snapshot[:n]
	}
	return prefix + snapshot + "-" + ts
}

// restoreSnapshot puts the snapshot's table back to the snapshot: when the
// table exists, a safety snapshot of it first (its name is answered), then
// the clone's folders, the table deleted, and the clone's transaction
// under the table's name. Between the delete and that transaction the
// table does not exist; a restore that stops there (its master died) is finished by
// running it again, which finds no table and only clones.
func (m *Master) restoreSnapshot(ctx context.Context, name string) (*tabulapb.RestoreSnapshotResponse, error) {
	r, err := m.findSnapshotAs(ctx, name, auth.Admin)
	if err != nil {
		return nil, err
	}
	if r.GetState() != meta.SnapshotReady {
		return nil, notReadyf("snapshot %s is still being created", name)
	}
	table, safety := r.GetTable(), ""
	rec, _, err := meta.GetTable(ctx, m.cli, m.layout, table)
	switch {
	case errors.Is(err, meta.ErrNotFound):
	case err != nil:
		return nil, err
	case rec.Schema.GetDeletionProtection():
		return nil, protectedf(table, "RestoreSnapshot")
	case rec.Schema.GetState() == meta.TableDeleting:
		// A delete (an earlier restore's, say) left unfinished: finish it.
		if err := m.deleteTable(ctx, table); err != nil {
			return nil, fmt.Errorf("restore of %s: finishing the deletion of table %s: %w", name, table, err)
		}
	default:
		safety = safetySnapshotName(name, time.Now())
		if _, err := m.createSnapshot(ctx, table, safety, 0); err != nil {
			return nil, fmt.Errorf("restore of %s: the safety snapshot %s of table %s: %w", name, safety, table, err)
		}
		m.log.Info("restore: safety snapshot taken", "snapshot", name, "table", table, "safety", safety)
		// The new tablets' folders before the delete, so that the table
		// is missing only from the delete to one transaction.
		a, err := m.prepareClone(ctx, name, table, auth.Admin)
		if err != nil {
			return nil, fmt.Errorf("restore of %s: preparing table %s (its state is in snapshot %s): %w", name, table, safety, err)
		}
		if err := m.deleteTable(ctx, table); err != nil {
			return nil, fmt.Errorf("restore of %s: deleting table %s (its state is in snapshot %s): %w", name, table, safety, err)
		}
		term, err := m.lead(ctx)
		if err == nil {
			if err = m.commitAdopt(ctx, term, a); err == nil {
				m.log.Info("snapshot restored", "snapshot", name, "table", table, "safety", safety)
				return &tabulapb.RestoreSnapshotResponse{SafetySnapshot: safety, Schema: a.schema, Tablets: uint32(len(a.recs))}, nil
			}
		}
		// The snapshot's record changed meanwhile (another clone), or
		// the term: clone anew below (the prepared folders are swept).
		m.log.Info("restore: cloning again", "snapshot", name, "table", table, "err", err)
	}
	schema, n, err := m.cloneSnapshot(ctx, name, table, auth.Admin)
	if err != nil {
		return nil, fmt.Errorf("restore of %s: creating table %s from it (run the restore again to finish it): %w", name, table, err)
	}
	m.log.Info("snapshot restored", "snapshot", name, "table", table, "safety", safety)
	return &tabulapb.RestoreSnapshotResponse{SafetySnapshot: safety, Schema: schema, Tablets: uint32(n)}, nil
}
