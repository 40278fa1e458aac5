package client

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// BackupAdmin is the master's backup schedules (tabula backup schedule;
// docs/OPERATIONS.md "Scheduled backups"). Setting and deleting a
// schedule needs admin on its table; listing, read on the cluster.
type BackupAdmin interface {
	SetBackupSchedule(ctx context.Context, table, location string, every, keep time.Duration) (BackupSchedule, error)
	ListBackupSchedules(ctx context.Context) ([]BackupSchedule, error)
	DeleteBackupSchedule(ctx context.Context, table string) error
}

var _ BackupAdmin = (*AdminClient)(nil)

// BackupSchedule is a table's backup schedule (tabula backup schedule;
// docs/OPERATIONS.md "Scheduled backups"): its policy and the state of its
// runs. Zero times are never.
type BackupSchedule struct {
	Table, Location string
	Every, Keep     time.Duration
	// NextDue is when the leading master runs the next backup (the retry
	// time after a failure).
	NextDue                  time.Time
	LastSuccess, LastFailure time.Time
	LastBackup, LastError    string
	// Failures counts the failed runs since the last success.
	Failures int
	// Backups are the ones the schedule made and keeps, oldest first.
	Backups []string
	Running bool
}

func micros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us)
}

func backupSchedule(p *tabulapb.BackupSchedule) BackupSchedule {
	return BackupSchedule{
		Table: p.GetTable(), Location: p.GetLocation(),
		Every: time.Duration(p.GetEverySeconds()) * time.Second, Keep: time.Duration(p.GetKeepSeconds()) * time.Second,
		NextDue: micros(p.GetNextDue()), LastSuccess: micros(p.GetLastSuccess()), LastFailure: micros(p.GetLastFailure()),
		LastBackup: p.GetLastBackup(), LastError: p.GetLastError(), Failures: int(p.GetFailures()),
		Backups: p.GetBackups(), Running: p.GetRunning(),
	}
}

func (a *AdminClient) callBackupSchedules(ctx context.Context, fn func(context.Context, tabulapb.BackupSchedulesClient) error) error {
	return a.retry(ctx, func(ctx context.Context) error {
		return a.c.loc.CallMasterConn(ctx, func(ctx context.Context, cc grpc.ClientConnInterface) error {
			return fn(ctx, tabulapb.NewBackupSchedulesClient(cc))
		})
	})
}

// SetBackupSchedule creates or replaces table's schedule: a backup to
// location every period (whole seconds), each deleted by the master once
// older than keep. INVALID_ARGUMENT names what is wrong with it.
func (a *AdminClient) SetBackupSchedule(ctx context.Context, table, location string, every, keep time.Duration) (BackupSchedule, error) {
	var s *tabulapb.BackupSchedule
	err := a.callBackupSchedules(ctx, func(ctx context.Context, c tabulapb.BackupSchedulesClient) (err error) {
		s, err = c.SetBackupSchedule(ctx, &tabulapb.SetBackupScheduleRequest{Table: table, Location: location,
			EverySeconds: int64(every / time.Second), KeepSeconds: int64(keep / time.Second)})
		return err
	})
	if err != nil {
		return BackupSchedule{}, err
	}
	return backupSchedule(s), nil
}

// ListBackupSchedules lists every table's schedule, by table.
func (a *AdminClient) ListBackupSchedules(ctx context.Context) ([]BackupSchedule, error) {
	var resp *tabulapb.ListBackupSchedulesResponse
	err := a.callBackupSchedules(ctx, func(ctx context.Context, c tabulapb.BackupSchedulesClient) (err error) {
		resp, err = c.ListBackupSchedules(ctx, &tabulapb.ListBackupSchedulesRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]BackupSchedule, 0, len(resp.GetSchedules()))
	for _, s := range resp.GetSchedules() {
		out = append(out, backupSchedule(s))
	}
	return out, nil
}

// DeleteBackupSchedule stops table's schedule (NOT_FOUND if it has none);
// the backups it made stay at their location.
func (a *AdminClient) DeleteBackupSchedule(ctx context.Context, table string) error {
	return a.callBackupSchedules(ctx, func(ctx context.Context, c tabulapb.BackupSchedulesClient) error {
		_, err := c.DeleteBackupSchedule(ctx, &tabulapb.DeleteBackupScheduleRequest{Table: table})
		return err
	})
}
