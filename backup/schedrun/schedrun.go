// Package schedrun runs the backups of the master's backup schedules
// (docs/OPERATIONS.md "Scheduled backups") with the backup package: it is
// the master.BackupRunner that `tabula master` and `tabula dev` give their
// master. It lives apart from both packages because the master may not
// import the backup package (whose restore opens tablets,
// internal/layering), and the backup package has no business knowing the
// master.
package schedrun

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/backup"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/vfs"
)

// Runner makes scheduled backups of the cluster whose storage is Source
// at SourceRoot (the master's own --storage).
type Runner struct {
	Source     vfs.FS
	SourceRoot string
	// Workers copies that many files at once (backup's default when 0).
	Workers int
}

var _ master.BackupRunner = Runner{}

// CreateBackup backs table up to location. With since set (a run an
// earlier term claimed), the newest complete backup of the table started
// since then is that run's, and is returned as it is; otherwise
// backup.Create runs, completing an unfinished backup of the table at the
// location if there is one.
func (r Runner) CreateBackup(ctx context.Context, table, location string, since time.Time, snaps master.BackupSnapshots) (string, error) {
	loc, done, err := backup.OpenSpooled(ctx, location)
	if err != nil {
		return "", err
	}
	defer done()
	if !since.IsZero() {
		infos, err := backup.List(loc)
		if err != nil {
			return "", err
		}
		found := ""
		for _, in := range infos {
			if in.Complete && in.Table == table && !in.Created.Before(since) && in.Name > found {
				found = in.Name
			}
		}
		if found != "" {
			return found, nil
		}
	}
	res, err := backup.Create(ctx, backup.CreateOptions{
		Table: table, To: loc, Source: r.Source, SourceRoot: r.SourceRoot,
		Cluster: cluster{snaps}, Workers: r.Workers,
	})
	if err != nil {
		return "", err
	}
	return res.Manifest.Name, nil
}

// DeleteBackup deletes one backup; one already gone is no error.
func (r Runner) DeleteBackup(ctx context.Context, location, name string) error {
	loc, done, err := backup.OpenSpooled(ctx, location)
	if err != nil {
		return err
	}
	defer done()
	infos, err := backup.List(loc)
	if err != nil {
		return err
	}
	for _, in := range infos {
		if in.Name == name {
			_, err = backup.Delete(ctx, loc, name)
			return err
		}
	}
	return nil // deleted by hand, or by a run that did not record it
}

// cluster is backup.Cluster on the master's own snapshots.
type cluster struct{ s master.BackupSnapshots }

func (c cluster) CreateSnapshot(ctx context.Context, table, name string) (client.SnapshotInfo, error) {
	snap, err := c.s.CreateSnapshot(ctx, table, name)
	if err != nil {
		return client.SnapshotInfo{}, err
	}
	return client.SnapshotInfo{Name: snap.GetName(), ID: snap.GetId(), Table: snap.GetTable(), State: snap.GetState(), Tablets: len(snap.GetTablets())}, nil
}

func (c cluster) SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error) {
	return c.s.SnapshotRecord(ctx, name)
}

func (c cluster) DeleteSnapshot(ctx context.Context, name string) error {
	return c.s.DeleteSnapshot(ctx, name)
}
