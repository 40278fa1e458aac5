package client

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// SnapshotAdmin creates, lists, describes, deletes, clones and restores
// table snapshots through the master (tabula snapshot; docs/OPERATIONS.md
// "Snapshots"). A snapshot is metadata only: it holds the table's files,
// which no compaction, split, merge, range drop or table deletion removes
// while it exists. Creating, deleting and restoring one needs admin on its
// table; listing and describing, read; cloning, read on its table and
// admin on the new one.
type SnapshotAdmin interface {
	CreateSnapshot(ctx context.Context, table, name string) (SnapshotInfo, error)
	CreateSnapshotExpiring(ctx context.Context, table, name string, expires time.Time) (SnapshotInfo, error)
	SetSnapshotExpiry(ctx context.Context, name string, expires time.Time) (SnapshotInfo, error)
	ListSnapshots(ctx context.Context, table string) ([]SnapshotInfo, error)
	DescribeSnapshot(ctx context.Context, name string) (SnapshotDescription, error)
	DeleteSnapshot(ctx context.Context, name string) error
	SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error)
	CloneSnapshot(ctx context.Context, name, table string) (CloneInfo, error)
	RestoreSnapshot(ctx context.Context, name string) (RestoreInfo, error)
}

// CloneInfo is the table a clone made: its name and number of tablets.
type CloneInfo struct {
	Table   string
	Tablets int
}

// RestoreInfo is what a restore did: the table it put back, its tablets,
// and SafetySnapshot, the snapshot of the table's state before the
// restore (empty when the table did not exist).
type RestoreInfo struct {
	Table, SafetySnapshot string
	Tablets               int
}

var _ SnapshotAdmin = (*AdminClient)(nil)

// SnapshotInfo is a snapshot: its Name, the ID of its record and holds, its
// Table, State ("creating" or "ready"), when it was created, when it
// expires (zero: never; the master deletes it then) and how
// many tablets it holds.
type SnapshotInfo struct {
	Name, ID, Table, State string
	Created, Expires       time.Time
	Tablets                int
}

// SnapshotDescription is a snapshot with its sizes: the distinct files it
// names and their bytes, of which ExclusiveBytes only it holds (what
// deleting it frees) and SharedBytes the table or another snapshot holds
// too.
type SnapshotDescription struct {
	SnapshotInfo
	Files, Bytes, ExclusiveBytes, SharedBytes uint64
}

func snapshotInfo(s *tabulapb.Snapshot) SnapshotInfo {
	info := SnapshotInfo{Name: s.GetName(), ID: s.GetId(), Table: s.GetTable(), State: s.GetState(),
		Created: time.UnixMicro(s.GetCreatedUnixMicros()), Tablets: len(s.GetTablets())}
	if e := s.GetExpireUnixMicros(); e != 0 {
		info.Expires = time.UnixMicro(e)
	}
	return info
}

// unixMicros is t in unix microseconds, 0 for the zero time (never).
func unixMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// callSnapshots runs fn on a master's Snapshots service, retrying as call
// does.
func (a *AdminClient) callSnapshots(ctx context.Context, fn func(context.Context, tabulapb.SnapshotsClient) error) error {
	return a.retry(ctx, func(ctx context.Context) error {
		return a.c.loc.CallMasterConn(ctx, func(ctx context.Context, cc grpc.ClientConnInterface) error {
			return fn(ctx, tabulapb.NewSnapshotsClient(cc))
		})
	})
}

// CreateSnapshot snapshots table as name: it holds every write
// acknowledged before the call began (ALREADY_EXISTS if the name is
// taken, NOT_FOUND without the table).
func (a *AdminClient) CreateSnapshot(ctx context.Context, table, name string) (SnapshotInfo, error) {
	return a.CreateSnapshotExpiring(ctx, table, name, time.Time{})
}

// CreateSnapshotExpiring is CreateSnapshot recording expires as the
// snapshot's expire time (zero: never): once it passes, the master
// deletes the snapshot as DeleteSnapshot does (within its backup
// schedules' interval, a minute by default).
func (a *AdminClient) CreateSnapshotExpiring(ctx context.Context, table, name string, expires time.Time) (SnapshotInfo, error) {
	var s *tabulapb.Snapshot
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		s, err = c.CreateSnapshot(ctx, &tabulapb.CreateSnapshotRequest{Table: table, Name: name, ExpireUnixMicros: unixMicros(expires)})
		return err
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	return snapshotInfo(s), nil
}

// SetSnapshotExpiry sets the expire time of the ready snapshot name (zero:
// never); it needs admin on its table.
func (a *AdminClient) SetSnapshotExpiry(ctx context.Context, name string, expires time.Time) (SnapshotInfo, error) {
	var s *tabulapb.Snapshot
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		s, err = c.UpdateSnapshot(ctx, &tabulapb.UpdateSnapshotRequest{Name: name, ExpireUnixMicros: unixMicros(expires)})
		return err
	})
	if err != nil {
		return SnapshotInfo{}, err
	}
	return snapshotInfo(s), nil
}

// ListSnapshots lists the snapshots of table, or of every table when it is
// empty, by table and name.
func (a *AdminClient) ListSnapshots(ctx context.Context, table string) ([]SnapshotInfo, error) {
	var resp *tabulapb.ListSnapshotsResponse
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		resp, err = c.ListSnapshots(ctx, &tabulapb.ListSnapshotsRequest{Table: table})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]SnapshotInfo, 0, len(resp.GetSnapshots()))
	for _, s := range resp.GetSnapshots() {
		out = append(out, snapshotInfo(s))
	}
	return out, nil
}

// DescribeSnapshot returns the snapshot name with its sizes.
func (a *AdminClient) DescribeSnapshot(ctx context.Context, name string) (SnapshotDescription, error) {
	var d *tabulapb.SnapshotDescription
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		d, err = c.DescribeSnapshot(ctx, &tabulapb.SnapshotNameRequest{Name: name})
		return err
	})
	if err != nil {
		return SnapshotDescription{}, err
	}
	return SnapshotDescription{SnapshotInfo: snapshotInfo(d.GetSnapshot()), Files: d.GetFiles(), Bytes: d.GetBytes(),
		ExclusiveBytes: d.GetExclusiveBytes(), SharedBytes: d.GetSharedBytes()}, nil
}

// DeleteSnapshot deletes the snapshot name: the files only it held are
// removed by the tablet servers and the master's GC.
func (a *AdminClient) DeleteSnapshot(ctx context.Context, name string) error {
	return a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) error {
		_, err := c.DeleteSnapshot(ctx, &tabulapb.SnapshotNameRequest{Name: name})
		return err
	})
}

// CloneSnapshot creates the table from the snapshot name: it serves the
// snapshot's data at once, sharing its files (nothing is copied; the
// clone's compactions write files of its own). ALREADY_EXISTS if the table
// exists, NOT_FOUND without the snapshot.
func (a *AdminClient) CloneSnapshot(ctx context.Context, name, table string) (CloneInfo, error) {
	var resp *tabulapb.CloneSnapshotResponse
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		resp, err = c.CloneSnapshot(ctx, &tabulapb.CloneSnapshotRequest{Name: name, Table: table})
		return err
	})
	if err != nil {
		return CloneInfo{}, err
	}
	return CloneInfo{Table: resp.GetSchema().GetName(), Tablets: int(resp.GetTablets())}, nil
}

// RestoreSnapshot puts the snapshot's table back to the snapshot name: a
// safety snapshot of the table first (named in the answer), then the table
// replaced by a clone of the snapshot; a table that no longer exists is
// created again. Writes acknowledged after the call began may be lost
// (the safety snapshot holds those acknowledged before it began).
func (a *AdminClient) RestoreSnapshot(ctx context.Context, name string) (RestoreInfo, error) {
	var resp *tabulapb.RestoreSnapshotResponse
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		resp, err = c.RestoreSnapshot(ctx, &tabulapb.RestoreSnapshotRequest{Name: name})
		return err
	})
	if err != nil {
		return RestoreInfo{}, err
	}
	return RestoreInfo{Table: resp.GetSchema().GetName(), SafetySnapshot: resp.GetSafetySnapshot(), Tablets: int(resp.GetTablets())}, nil
}
