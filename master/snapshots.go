package master

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
)

// Snapshots (docs/CONTRACTS.md §4a): the leader writes a snapshot's record
// (creating), asks each tablet's owner to hold its files (HoldTablet: a
// flush, then a hold beside the files), and marks the record ready in one
// transaction naming the tablets. A create that fails on the way deletes
// its record: its holds are then dead, released by their servers and
// swept with their folders. A leader elected with a creating record (its
// creator's term is over, so that creator's last write would fail) deletes
// it likewise.

// snapshotAttempts is how many times a create reads the tablet map again
// when a tablet split, merged or moved under it.
const snapshotAttempts = 4

// snapshotServer serves the Snapshots service (api/tabulapb/snapshot.proto)
// on the master's port.
type snapshotServer struct {
	tabulapb.UnimplementedSnapshotsServer
	m *Master
}

// validateSnapshotName checks a snapshot's name: it and a suffix make its
// id, one plain path element (manifest.ValidateHoldID).
func validateSnapshotName(name string) error {
	if len(name) > 100 {
		return cell.Invalidf("snapshot name %q is longer than 100 characters", name)
	}
	if err := manifest.ValidateHoldID(name); err != nil {
		return cell.Invalidf("snapshot name %q must be 1 to 100 characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _", name)
	}
	return nil
}

func newSnapshotID(name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name + "." + hex.EncodeToString(b[:])
}

// CreateSnapshot snapshots a table.
func (s snapshotServer) CreateSnapshot(ctx context.Context, req *tabulapb.CreateSnapshotRequest) (*tabulapb.Snapshot, error) {
	out, err := s.m.createSnapshot(ctx, req.GetTable(), req.GetName(), req.GetExpireUnixMicros())
	return out, toStatus(ctx, err)
}

// createSnapshot snapshots table as name, recording expire (unix micros,
// 0: never) as its expire time.
func (m *Master) createSnapshot(ctx context.Context, table, name string, expire int64) (*tabulapb.Snapshot, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return nil, err
	}
	if err := validateSnapshotName(name); err != nil {
		return nil, err
	}
	var last error
	for range snapshotAttempts {
		snap, retry, err := m.trySnapshot(ctx, table, name, expire)
		if err == nil {
			return snap, nil
		}
		if !retry || ctx.Err() != nil {
			return nil, err
		}
		last = err
	}
	return nil, fmt.Errorf("%w: snapshot %s of table %s: the table kept changing (%d attempts); retry: %w", ErrNotReady, name, table, snapshotAttempts, last)
}

// trySnapshot is one attempt; retry reports a failure that another attempt
// may not meet (a tablet that moved, split or merged).
func (m *Master) trySnapshot(ctx context.Context, table, name string, expire int64) (_ *tabulapb.Snapshot, retry bool, _ error) {
	term, err := m.lead(ctx)
	if err != nil {
		return nil, false, err
	}
	rec, tableRev, err := meta.GetTable(ctx, m.cli, m.layout, table)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, false, notFoundf("table %s does not exist", table)
	}
	if err != nil {
		return nil, false, err
	}
	if rec.Schema.GetState() == meta.TableDeleting {
		return nil, false, notFoundf("table %s is being deleted", table)
	}
	snap := &tabulapb.Snapshot{
		Name: name, Id: newSnapshotID(name), Table: table, Schema: rec.Schema,
		State: meta.SnapshotCreating, CreatedUnixMicros: time.Now().UnixMicro(), ExpireUnixMicros: expire,
	}
	// 1. The record first: every hold is written after it exists.
	if _, err := meta.CreateSnapshotRecord(ctx, m.cli, m.layout, snap, tableRev, term.guard()); err != nil {
		if errors.Is(err, meta.ErrConflict) {
			if _, taken := m.findSnapshot(ctx, name); taken == nil {
				return nil, false, existsf("snapshot %s exists", name)
			}
			return nil, true, err // the table changed, or the term ended
		}
		return nil, false, err
	}
	abort := func(why error) {
		if err := meta.DeleteSnapshotRecord(context.WithoutCancel(ctx), m.cli, m.layout, snap, term.guard()); err != nil {
			m.log.Warn("snapshot: removing the record of a failed create (the next leader does)", "snapshot", name, "id", snap.Id, "err", err)
		}
		m.log.Info("snapshot: create failed", "snapshot", name, "table", table, "err", why)
	}
	// 2. Every tablet of one read of the map: their ranges tile the key
	// space. A tablet that changed since fails its hold, and the attempt.
	tablets, _, err := meta.GetTablets(ctx, m.cli, m.layout, table)
	if err != nil {
		abort(err)
		return nil, false, err
	}
	for _, t := range tablets {
		if t.Address == "" || t.State != meta.StateAssigned {
			err := notReadyf("tablet %s of table %s is not served", t.ID, table)
			abort(err)
			return nil, true, err
		}
		if err := m.holdTablet(ctx, t.Address, &tabulapb.HoldTabletRequest{Tablet: &tabulapb.TabletRef{Table: table, TabletId: t.ID, Epoch: t.Epoch}, SnapshotId: snap.Id}); err != nil {
			abort(err)
			return nil, retryableDrop(err), fmt.Errorf("snapshot %s: holding tablet %s: %w", name, t.ID, err)
		}
		snap.Tablets = append(snap.Tablets, &tabulapb.SnapshotTablet{TabletId: t.ID, StartKey: t.Start, EndKey: t.End})
	}
	// 3. Ready, naming the tablets, in one transaction.
	snap.State = meta.SnapshotReady
	recs, err := meta.ListSnapshotRecords(ctx, m.cli, m.layout)
	if err != nil {
		abort(err)
		return nil, false, err
	}
	i := slices.IndexFunc(recs, func(r meta.VersionedSnapshot) bool { return r.GetId() == snap.Id })
	if i < 0 {
		return nil, false, fmt.Errorf("snapshot %s: its record is gone", name)
	}
	if err := meta.PutSnapshotRecord(ctx, m.cli, m.layout, snap, recs[i].ModRevision, term.guard()); err != nil {
		abort(err)
		return nil, false, err
	}
	m.log.Info("snapshot created", "snapshot", name, "id", snap.Id, "table", table, "tablets", len(snap.Tablets))
	return snap, false, nil
}

// holdTablet asks a tablet's owner to hold its files. A flush comes first,
// so it may take as long as a drop's (dropRangeTimeout).
func (m *Master) holdTablet(ctx context.Context, addr string, req *tabulapb.HoldTabletRequest) error {
	c, err := m.conns.snapshots(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, max(m.opts.RPCTimeout, time.Minute))
	defer cancel()
	_, err = c.HoldTablet(ctx, req)
	return err
}

// findSnapshot returns the record of the snapshot named name.
func (m *Master) findSnapshot(ctx context.Context, name string) (meta.VersionedSnapshot, error) {
	recs, err := meta.ListSnapshotRecords(ctx, m.cli, m.layout)
	if err != nil {
		return meta.VersionedSnapshot{}, err
	}
	for _, r := range recs {
		// A retired record's name is free: it is no longer the snapshot's.
		if r.GetName() == name && r.GetState() != meta.SnapshotRetired {
			return r, nil
		}
	}
	return meta.VersionedSnapshot{}, notFoundf("snapshot %s does not exist (`tabula snapshot list` lists them)", name)
}

// findSnapshotAs returns the record of the snapshot named name, if the
// caller has role on its table.
func (m *Master) findSnapshotAs(ctx context.Context, name string, role auth.Role) (meta.VersionedSnapshot, error) {
	r, err := m.findSnapshot(ctx, name)
	if err != nil {
		return r, err
	}
	return r, m.mayOnSnapshot(ctx, r.Snapshot, role)
}

// mayOnSnapshot checks that the caller has role on the snapshot's table:
// the guard cannot tell the table from a request naming the snapshot only
// (auth.SnapshotRules).
func (m *Master) mayOnSnapshot(ctx context.Context, snap *tabulapb.Snapshot, role auth.Role) error {
	c := m.guard.Cache()
	if c == nil {
		return nil
	}
	id := auth.IdentityFrom(ctx)
	if c.RoleOn(id.Name, snap.GetTable()) >= role {
		return nil
	}
	if c.Sync(ctx) == nil && c.RoleOn(id.Name, snap.GetTable()) >= role {
		return nil
	}
	return status.Errorf(codes.PermissionDenied, "%s may not act on snapshot %s: it needs the %s role on table %s; an admin grants it with `tabula auth grant %s %s %s`",
		id.Name, snap.GetName(), role, snap.GetTable(), id.Name, snap.GetTable(), role)
}

// ListSnapshots lists the snapshots, of one table or of every table.
func (s snapshotServer) ListSnapshots(ctx context.Context, req *tabulapb.ListSnapshotsRequest) (*tabulapb.ListSnapshotsResponse, error) {
	recs, err := meta.ListSnapshotRecords(ctx, s.m.cli, s.m.layout)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	out := &tabulapb.ListSnapshotsResponse{}
	for _, r := range recs {
		if r.GetState() != meta.SnapshotRetired && (req.GetTable() == "" || r.GetTable() == req.GetTable()) {
			out.Snapshots = append(out.Snapshots, r.Snapshot)
		}
	}
	slices.SortFunc(out.Snapshots, func(a, b *tabulapb.Snapshot) int {
		if c := strings.Compare(a.GetTable(), b.GetTable()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out, nil
}

// DescribeSnapshot returns a snapshot with its sizes.
func (s snapshotServer) DescribeSnapshot(ctx context.Context, req *tabulapb.SnapshotNameRequest) (*tabulapb.SnapshotDescription, error) {
	d, err := s.m.describeSnapshot(ctx, req.GetName())
	return d, toStatus(ctx, err)
}

func (m *Master) describeSnapshot(ctx context.Context, name string) (*tabulapb.SnapshotDescription, error) {
	r, err := m.findSnapshotAs(ctx, name, auth.Read)
	if err != nil {
		return nil, err
	}
	d := &tabulapb.SnapshotDescription{Snapshot: r.Snapshot}
	if m.opts.StorageRoot == "" || r.GetState() != meta.SnapshotReady {
		return d, nil
	}
	mine, err := m.snapshotFiles(r.Snapshot)
	if err != nil {
		return nil, err
	}
	// What else names a file: the table's live tablets and its other
	// snapshots.
	shared := map[string]bool{}
	tablets, _, err := meta.GetTablets(ctx, m.cli, m.layout, r.GetTable())
	if err != nil {
		return nil, err
	}
	for _, t := range tablets {
		dir, err := storepath.Tablet(m.opts.StorageRoot, t.Table, t.ID)
		if err != nil {
			return nil, err
		}
		st, found, err := manifest.Load(m.fs(), dir)
		if err != nil {
			return nil, err
		}
		if found {
			for _, f := range st.Files {
				shared[filepath.Join(dir, filepath.FromSlash(f.Path))] = true
			}
		}
	}
	recs, err := meta.ListSnapshotRecords(ctx, m.cli, m.layout)
	if err != nil {
		return nil, err
	}
	for _, o := range recs {
		if o.GetId() == r.GetId() || o.GetTable() != r.GetTable() || o.GetState() != meta.SnapshotReady {
			continue
		}
		files, err := m.snapshotFiles(o.Snapshot)
		if err != nil {
			return nil, err
		}
		for p := range files {
			shared[p] = true
		}
	}
	for p, size := range mine {
		d.Files++
		d.Bytes += size
		if !shared[p] {
			d.ExclusiveBytes += size
		}
	}
	d.SharedBytes = d.Bytes - d.ExclusiveBytes
	return d, nil
}

// snapshotFiles reads a ready snapshot's holds: every file it names, by
// path, with its size.
func (m *Master) snapshotFiles(snap *tabulapb.Snapshot) (map[string]uint64, error) {
	out := map[string]uint64{}
	for _, t := range snap.GetTablets() {
		dir, err := storepath.Tablet(m.opts.StorageRoot, snap.GetTable(), t.GetTabletId())
		if err != nil {
			return nil, err
		}
		st, err := manifest.LoadHold(m.fs(), dir, snap.GetId())
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", snap.GetName(), err)
		}
		hd := manifest.HoldDir(dir, snap.GetId())
		for _, f := range st.Files {
			out[filepath.Join(hd, filepath.FromSlash(f.Path))] = f.Size
		}
	}
	return out, nil
}

// DeleteSnapshot deletes a snapshot's record; its holds are released by
// the tablet servers and swept with their folders by the GC. A snapshot
// with clones retires instead (clone.go).
func (s snapshotServer) DeleteSnapshot(ctx context.Context, req *tabulapb.SnapshotNameRequest) (*tabulapb.DeleteSnapshotResponse, error) {
	err := s.m.deleteSnapshot(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.DeleteSnapshotResponse{}, nil
}

func (m *Master) deleteSnapshot(ctx context.Context, name string) error {
	term, err := m.lead(ctx)
	if err != nil {
		return err
	}
	r, err := m.findSnapshotAs(ctx, name, auth.Admin)
	if err != nil {
		return err
	}
	return m.dropSnapshot(ctx, term, r)
}

// dropSnapshot deletes the record r read, or retires it when tables were
// cloned from it; a record changed since the read fails (ErrConflict).
// DeleteSnapshot and the expiry sweep (snapshot_expire.go) call it.
func (m *Master) dropSnapshot(ctx context.Context, term *leadership, r meta.VersionedSnapshot) error {
	name := r.GetName()
	if len(r.GetClones()) > 0 {
		// Tables cloned from it may name its files: it retires, and the
		// GC drops it once nothing else names them (clone.go).
		if err := meta.RetireSnapshotRecord(ctx, m.cli, m.layout, r.Snapshot, r.ModRevision, term.guard()); err != nil {
			return err
		}
		m.log.Info("snapshot deleted; retired until no clone names its files", "snapshot", name, "id", r.GetId(), "table", r.GetTable(), "clones", r.GetClones())
		return nil
	}
	if err := meta.DeleteSnapshotRecordAt(ctx, m.cli, m.layout, r.Snapshot, r.ModRevision, term.guard()); err != nil {
		return err // ErrConflict: a clone was made since the read; retry
	}
	m.log.Info("snapshot deleted", "snapshot", name, "id", r.GetId(), "table", r.GetTable())
	return nil
}

// abortCreatingSnapshots deletes the records of snapshots whose creation
// an earlier term left unfinished (run once at the start of a term).
func (m *Master) abortCreatingSnapshots(term *leadership) {
	recs, err := meta.ListSnapshotRecords(term.ctx, m.cli, m.layout)
	if err != nil {
		if term.ctx.Err() == nil {
			m.log.Warn("snapshot: reading the records at the start of the term", "err", err)
		}
		return
	}
	for _, r := range recs {
		// A record written in this term is a create under way here.
		if r.GetState() != meta.SnapshotCreating || r.ModRevision > term.rev {
			continue
		}
		if err := meta.DeleteSnapshotRecord(term.ctx, m.cli, m.layout, r.Snapshot, term.guard()); err != nil {
			m.log.Warn("snapshot: removing the record of an unfinished create", "snapshot", r.GetName(), "err", err)
			continue
		}
		m.log.Info("snapshot: removed the record of a create an earlier term left unfinished", "snapshot", r.GetName(), "id", r.GetId())
	}
}
