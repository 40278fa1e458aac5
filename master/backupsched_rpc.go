package master

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// minScheduleEvery is the shortest period of a backup schedule: a backup
// takes a snapshot and lists the location, too much to repeat faster.
const minScheduleEvery = time.Minute

// backupScheduleServer serves the BackupSchedules service (api/tabulapb/
// backupsched.proto) on the master's port: `tabula backup schedule` goes
// through it, so setting a schedule needs admin on its table
// (auth.BackupScheduleRules), not write access to etcd.
type backupScheduleServer struct {
	tabulapb.UnimplementedBackupSchedulesServer
	m *Master
}

// SetBackupSchedule creates or replaces a table's schedule.
func (s backupScheduleServer) SetBackupSchedule(ctx context.Context, req *tabulapb.SetBackupScheduleRequest) (*tabulapb.BackupSchedule, error) {
	out, err := s.m.setBackupSchedule(ctx, req)
	return out, toStatus(ctx, err)
}

// validateSchedule checks a request's policy, naming the fix.
func validateSchedule(req *tabulapb.SetBackupScheduleRequest) error {
	if err := cell.ValidateTableName(req.GetTable()); err != nil {
		return err
	}
	every, keep := time.Duration(req.GetEverySeconds())*time.Second, time.Duration(req.GetKeepSeconds())*time.Second
	loc := req.GetLocation()
	switch {
	case loc == "":
		return cell.Invalidf("backup schedule of %s: no location: give --to DIR (an absolute path on the masters' machines) or --to s3://BUCKET/PREFIX", req.GetTable())
	case !strings.Contains(loc, "://") && !filepath.IsAbs(loc):
		return cell.Invalidf("backup schedule of %s: location %q is a relative path, but the master runs the backups: give an absolute path on the masters' machines, or s3://BUCKET/PREFIX", req.GetTable(), loc)
	case strings.Contains(loc, "://") && !strings.HasPrefix(loc, "s3://"):
		return cell.Invalidf("backup schedule of %s: location %q: only local paths and s3://BUCKET/PREFIX are backup locations", req.GetTable(), loc)
	case every < minScheduleEvery:
		return cell.Invalidf("backup schedule of %s: --every %v is below the minimum %v", req.GetTable(), every, minScheduleEvery)
	case keep < every:
		return cell.Invalidf("backup schedule of %s: --keep %v is shorter than --every %v: each backup would be deleted before the next is made; give --keep of at least %v", req.GetTable(), keep, every, every)
	}
	return nil
}

func (m *Master) setBackupSchedule(ctx context.Context, req *tabulapb.SetBackupScheduleRequest) (*tabulapb.BackupSchedule, error) {
	if err := validateSchedule(req); err != nil {
		return nil, err
	}
	term, err := m.lead(ctx)
	if err != nil {
		return nil, err
	}
	if _, _, err := meta.GetTable(ctx, m.cli, m.layout, req.GetTable()); errors.Is(err, meta.ErrNotFound) {
		return nil, notFoundf("table %s does not exist", req.GetTable())
	} else if err != nil {
		return nil, err
	}
	// A replaced schedule keeps its anchor, its run state and the backups
	// it made (still expired by the new keep); a new one is due at once.
	cur, err := meta.GetBackupSchedule(ctx, m.cli, m.layout, req.GetTable())
	if errors.Is(err, meta.ErrNotFound) {
		cur = meta.VersionedBackupSchedule{BackupSchedule: meta.BackupSchedule{Table: req.GetTable(), Anchor: m.opts.now().UnixMicro()}}
	} else if err != nil {
		return nil, err
	}
	s := cur.BackupSchedule
	s.Location, s.EverySeconds, s.KeepSeconds = req.GetLocation(), req.GetEverySeconds(), req.GetKeepSeconds()
	if cur.ModRevision != 0 && cur.Location != s.Location {
		// The backups made so far are at the old location: forgetting
		// them leaves them there, never expired by a schedule that no
		// longer writes there.
		s.Backups = nil
	}
	if _, err := meta.PutBackupSchedule(ctx, m.cli, m.layout, s, cur.ModRevision, term.guard()); err != nil {
		return nil, err
	}
	m.log.Info("backup schedule set", "table", s.Table, "every", req.GetEverySeconds(), "keep", req.GetKeepSeconds(), "location", s.Location)
	return scheduleProto(&s, m.opts.now()), nil
}

// DeleteBackupSchedule stops a table's schedule; its backups stay.
func (s backupScheduleServer) DeleteBackupSchedule(ctx context.Context, req *tabulapb.DeleteBackupScheduleRequest) (*tabulapb.DeleteBackupScheduleResponse, error) {
	term, err := s.m.lead(ctx)
	if err == nil {
		err = meta.DeleteBackupSchedule(ctx, s.m.cli, s.m.layout, req.GetTable(), term.guard())
		if errors.Is(err, meta.ErrNotFound) {
			err = notFoundf("table %s has no backup schedule (`tabula backup schedule list` lists them)", req.GetTable())
		}
	}
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	s.m.log.Info("backup schedule deleted", "table", req.GetTable())
	return &tabulapb.DeleteBackupScheduleResponse{}, nil
}

// ListBackupSchedules lists every schedule; a standby answers from etcd.
func (s backupScheduleServer) ListBackupSchedules(ctx context.Context, _ *tabulapb.ListBackupSchedulesRequest) (*tabulapb.ListBackupSchedulesResponse, error) {
	recs, err := meta.ListBackupSchedules(ctx, s.m.cli, s.m.layout)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	now := s.m.opts.now()
	out := &tabulapb.ListBackupSchedulesResponse{}
	for i := range recs {
		out.Schedules = append(out.Schedules, scheduleProto(&recs[i].BackupSchedule, now))
	}
	return out, nil
}

// scheduleProto is a schedule record as the API shows it, at now.
func scheduleProto(s *meta.BackupSchedule, now time.Time) *tabulapb.BackupSchedule {
	p := &tabulapb.BackupSchedule{
		Table: s.Table, Location: s.Location, EverySeconds: s.EverySeconds, KeepSeconds: s.KeepSeconds,
		Anchor: s.Anchor, NextDue: scheduleNextDue(s, now.UnixMicro()),
		LastSuccess: s.LastSuccess, LastBackup: s.LastBackup, LastFailure: s.LastFailure, LastError: s.LastError,
		Failures: int32(s.Failures), RetryAt: s.RetryAt, Running: s.RunningSlot != 0,
	}
	for _, b := range s.Backups {
		p.Backups = append(p.Backups, b.Name)
	}
	return p
}

// ListBackupSchedules lists every table's backup schedule, as the
// BackupSchedules service does (the status page reads it in process).
func (m *Master) ListBackupSchedules(ctx context.Context, req *tabulapb.ListBackupSchedulesRequest) (*tabulapb.ListBackupSchedulesResponse, error) {
	return backupScheduleServer{m: m}.ListBackupSchedules(ctx, req)
}

// ListSnapshots lists the snapshots, as the Snapshots service does (the
// status page reads it in process).
func (m *Master) ListSnapshots(ctx context.Context, req *tabulapb.ListSnapshotsRequest) (*tabulapb.ListSnapshotsResponse, error) {
	return snapshotServer{m: m}.ListSnapshots(ctx, req)
}
