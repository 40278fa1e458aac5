package statuspage

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// backupsFake is fakeMaster with snapshots and backup schedules.
type backupsFake struct {
	*fakeMaster
	snaps  []*tabulapb.Snapshot
	scheds []*tabulapb.BackupSchedule
}

func (f *backupsFake) ListSnapshots(context.Context, *tabulapb.ListSnapshotsRequest) (*tabulapb.ListSnapshotsResponse, error) {
	return &tabulapb.ListSnapshotsResponse{Snapshots: f.snaps}, nil
}

func (f *backupsFake) ListBackupSchedules(context.Context, *tabulapb.ListBackupSchedulesRequest) (*tabulapb.ListBackupSchedulesResponse, error) {
	return &tabulapb.ListBackupSchedulesResponse{Schedules: f.scheds}, nil
}

// TestBackupsPageListsSnapshotsAndSchedules: /backups shows each snapshot
// (name, table, age, tablets) and each schedule (table, every, keep,
// location, age of the last good backup, failures and the last error, next
// run), escaped; linked from every page's header.
func TestBackupsPageListsSnapshotsAndSchedules(t *testing.T) {
	now := time.Now()
	f := &backupsFake{fakeMaster: newFake(),
		snaps: []*tabulapb.Snapshot{{Name: "before-migration", Table: "users", State: "ready",
			CreatedUnixMicros: now.Add(-2 * time.Hour).UnixMicro(), Tablets: make([]*tabulapb.SnapshotTablet, 3)}},
		scheds: []*tabulapb.BackupSchedule{
			{Table: "users", Location: "s3://bk/prod", EverySeconds: 86400, KeepSeconds: 7 * 86400,
				LastSuccess: now.Add(-5 * time.Hour).UnixMicro(), LastBackup: "users.20260101T000000.000Z", Backups: []string{"a", "b"},
				NextDue: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC).UnixMicro()},
			{Table: "orders", Location: "/mnt/bk", EverySeconds: 3600, KeepSeconds: 86400, Failures: 2,
				LastFailure: now.Add(-time.Minute).UnixMicro(), LastError: "s3: <403> Forbidden", Running: true},
		}}
	srv := serve(t, New(f, Options{}))
	code, page := get(t, srv.URL+"/backups")
	if code != 200 {
		t.Fatalf("GET /backups: %d\n%s", code, page)
	}
	for _, want := range []string{
		"before-migration", `href="/tables/users"`, ">ready<", `<td class="n">3</td>`,
		"s3://bk/prod", "24h0m0s", "168h0m0s", "users.20260101T000000.000Z", "2026-01-02 00:00:00Z",
		"/mnt/bk", "none yet", "s3: &lt;403&gt; Forbidden", "running",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/backups lacks %q", want)
		}
	}
	for _, re := range []string{`before-migration</td><td><a href="/tables/users">users</a></td><td>ready</td><td>2h0m\d+s ago`,
		`users.20260101T000000.000Z \(5h0m\d+s ago\)`} {
		if !regexp.MustCompile(re).MatchString(page) {
			t.Errorf("/backups does not match %s", re)
		}
	}
	if _, home := get(t, srv.URL+"/"); !strings.Contains(home, `href="/backups"`) {
		t.Error("the header does not link /backups")
	}
}
