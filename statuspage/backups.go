package statuspage

import (
	"context"
	"net/http"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// BackupsMaster is what the Backups page reads of a master beside Master;
// *master.Master is one. A Master without it shows no Backups page.
type BackupsMaster interface {
	ListSnapshots(context.Context, *tabulapb.ListSnapshotsRequest) (*tabulapb.ListSnapshotsResponse, error)
	ListBackupSchedules(context.Context, *tabulapb.ListBackupSchedulesRequest) (*tabulapb.ListBackupSchedulesResponse, error)
}

type snapshotRow struct {
	Name, Table, State string
	Created            time.Time
	Tablets            int
}

type scheduleRow struct {
	Table, Location string
	Every, Keep     time.Duration
	// LastGood is the time of the last good backup (zero: none yet).
	LastGood    time.Time
	LastBackup  string
	LastFailure time.Time
	LastError   string
	Failures    int32
	NextDue     time.Time
	Running     bool
	Backups     int
}

func micros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

// backups is the page of snapshots and backup schedules (docs/
// OPERATIONS.md "Scheduled backups"); sizes are left out: a snapshot's
// size reads every tablet's hold from storage.
func (p *Page) backups(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	b := p.base(ctx, "Backups")
	bm, _ := p.m.(BackupsMaster)
	var snaps []snapshotRow
	var scheds []scheduleRow
	if bm != nil {
		if resp, err := bm.ListSnapshots(ctx, &tabulapb.ListSnapshotsRequest{}); err != nil {
			b.Err = err.Error()
		} else {
			for _, s := range resp.GetSnapshots() {
				snaps = append(snaps, snapshotRow{Name: s.GetName(), Table: s.GetTable(), State: s.GetState(),
					Created: micros(s.GetCreatedUnixMicros()), Tablets: len(s.GetTablets())})
			}
		}
		if resp, err := bm.ListBackupSchedules(ctx, &tabulapb.ListBackupSchedulesRequest{}); err != nil {
			b.Err = err.Error()
		} else {
			for _, s := range resp.GetSchedules() {
				scheds = append(scheds, scheduleRow{Table: s.GetTable(), Location: s.GetLocation(),
					Every: time.Duration(s.GetEverySeconds()) * time.Second, Keep: time.Duration(s.GetKeepSeconds()) * time.Second,
					LastGood: micros(s.GetLastSuccess()), LastBackup: s.GetLastBackup(), LastFailure: micros(s.GetLastFailure()),
					LastError: s.GetLastError(), Failures: s.GetFailures(), NextDue: micros(s.GetNextDue()),
					Running: s.GetRunning(), Backups: len(s.GetBackups())})
			}
		}
	}
	p.render(w, "backups.html", struct {
		base
		Snapshots []snapshotRow
		Schedules []scheduleRow
	}{b, snaps, scheds})
}
