package schedrun_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/backup"
	"github.com/tabuladb/tabula/backup/schedrun"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs/backend"
)

// adminSnapshots is master.BackupSnapshots through the client, for
// calling the runner from outside the master.
type adminSnapshots struct{ a *client.AdminClient }

func (s adminSnapshots) CreateSnapshot(ctx context.Context, table, name string) (*tabulapb.Snapshot, error) {
	if _, err := s.a.CreateSnapshot(ctx, table, name); err != nil {
		return nil, err
	}
	return s.a.SnapshotRecord(ctx, name)
}

func (s adminSnapshots) SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error) {
	return s.a.SnapshotRecord(ctx, name)
}

func (s adminSnapshots) DeleteSnapshot(ctx context.Context, name string) error {
	return s.a.DeleteSnapshot(ctx, name)
}

// TestRunnerMakesFindsAndDeletesBackups: a dev cluster's master, given a
// schedule, makes a real backup with the backup package (its snapshots
// taken and deleted in process) that verifies and lists as complete,
// and records it; the runner asked again for a run claimed before that
// backup finds it instead of making another; deleting it removes it, and
// deleting it again is no error (docs/CONTRACTS.md §7). The wait for the
// master's first round is bounded by a context, not a sleep. Run on a
// plain cluster and on one with TLS and authentication, where the master
// takes its snapshots in process without a caller's token.
func TestRunnerMakesFindsAndDeletesBackups(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("auth=%v", secure), func(t *testing.T) { testRunner(t, secure) })
	}
}

func testRunner(t *testing.T, secure bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := devcluster.Start(ctx, devcluster.Config{Dir: dir, Servers: 1, LeaseTTL: 5 * time.Second, NoFsync: true, Auth: secure,
		BackupScheduleInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{c.MasterAddr()}, TLS: c.ClientTLS(), Token: c.AdminToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	admin := cli.Admin()
	if err := admin.CreateTable(ctx, "sched", []families.Family{families.Default("cf")}, nil); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("sched")
	for i := range 50 {
		m := client.NewMutation().Set("cf", []byte("q"), 1000, fmt.Appendf(nil, "v%d", i))
		for {
			err := tbl.Apply(ctx, fmt.Appendf(nil, "r%02d", i), m)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
		}
	}
	at := filepath.Join(dir, "backups")
	started := time.Now()
	if _, err := admin.SetBackupSchedule(ctx, "sched", at, time.Hour, 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	var sc client.BackupSchedule
	for sc.LastBackup == "" {
		if ctx.Err() != nil {
			t.Fatalf("the master made no scheduled backup: %+v", sc)
		}
		scheds, err := admin.ListBackupSchedules(ctx)
		if err != nil || len(scheds) != 1 {
			t.Fatalf("schedules %v, %v", scheds, err)
		}
		sc = scheds[0]
		select { // poll, bounded by ctx
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	if sc.Failures != 0 || sc.LastError != "" || len(sc.Backups) != 1 || sc.Backups[0] != sc.LastBackup {
		t.Fatalf("schedule after its first run: %+v", sc)
	}
	loc, err := backup.Open(ctx, at, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	infos, err := backup.List(loc)
	if err != nil || len(infos) != 1 || !infos[0].Complete || infos[0].Name != sc.LastBackup || infos[0].Table != "sched" {
		t.Fatalf("backups at the location: %+v, %v", infos, err)
	}
	if rep, err := backup.Verify(ctx, loc, sc.LastBackup, 2, nil); err != nil || len(rep.Damaged) != 0 || rep.Files == 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if snaps, err := admin.ListSnapshots(ctx, ""); err != nil || len(snaps) != 0 {
		t.Fatalf("the scheduled backup left snapshots: %v, %v", snaps, err)
	}
	if err := admin.DeleteBackupSchedule(ctx, "sched"); err != nil {
		t.Fatal(err)
	}

	src, root, err := backend.Open(ctx, filepath.Join(dir, "data"), "")
	if err != nil {
		t.Fatal(err)
	}
	r := schedrun.Runner{Source: src, SourceRoot: root}
	name, err := r.CreateBackup(ctx, "sched", at, started, adminSnapshots{admin})
	if err != nil || name != sc.LastBackup {
		t.Fatalf("a rerun of the claimed slot: %q, %v; want the backup it made, %s", name, err, sc.LastBackup)
	}
	if infos, _ := backup.List(loc); len(infos) != 1 {
		t.Fatalf("the rerun made another backup: %+v", infos)
	}
	if err := r.DeleteBackup(ctx, at, name); err != nil {
		t.Fatal(err)
	}
	if infos, _ := backup.List(loc); len(infos) != 0 {
		t.Fatalf("after delete: %+v", infos)
	}
	if err := r.DeleteBackup(ctx, at, name); err != nil {
		t.Fatalf("deleting a deleted backup: %v", err)
	}
}
