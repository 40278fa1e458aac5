package master

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// Scheduled backups (docs/OPERATIONS.md "Scheduled backups"). A table's
// schedule (meta.BackupSchedule) is due at its slots anchor + k*every. At
// each tick the leader, for every schedule whose latest slot is past its
// DoneSlot (and past RetryAt after a failure):
//
//  1. claims the slot: writes RunningSlot under its term's guard at the
//     record's revision, so two leaders never both start it;
//  2. runs the backup (BackupRunner);
//  3. records the outcome under its guard: DoneSlot on success (that slot
//     and every earlier one never run again), else the error and a retry
//     time with backoff.
//
// A term that ends between 1 and 3 leaves RunningSlot set and DoneSlot
// behind: the next leader runs the slot again, and the backup package
// completes the unfinished backup at the location instead of making a
// second one. Slots missed while no master led collapse into one run (the
// latest slot's): a backup copies the table as it is now, so two runs back
// to back would make the same backup twice. After each tick the leader
// deletes the schedule's own backups older than its keep.

// BackupRunner makes and deletes the backups of schedules. cmd/tabula
// gives the master one built on the backup package (backup/schedrun); the
// master cannot import that package itself, as its restore opens tablets
// (internal/layering).
type BackupRunner interface {
	// CreateBackup backs table up to location with the master's own
	// snapshots and returns the backup's name. since, when not zero, is
	// when an earlier term claimed this run: a complete backup of table
	// at location started since then is that run's, and is returned
	// instead of making another.
	CreateBackup(ctx context.Context, table, location string, since time.Time, snaps BackupSnapshots) (string, error)
	// DeleteBackup deletes one backup at location; a backup that is gone
	// already is no error.
	DeleteBackup(ctx context.Context, location, name string) error
}

// BackupSnapshots are the snapshot calls a backup makes, served in the
// master's process: no RPC and no caller to authorize (the schedule's
// owner was authorized when it was set). Errors are gRPC status errors,
// as the client's would be.
type BackupSnapshots interface {
	CreateSnapshot(ctx context.Context, table, name string) (*tabulapb.Snapshot, error)
	SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error)
	DeleteSnapshot(ctx context.Context, name string) error
}

const (
	defaultBackupScheduleInterval = time.Minute
	// maxScheduleRetry bounds the backoff after failed runs (and so does
	// the period: a failing schedule is tried at least once a period).
	maxScheduleRetry = time.Hour
)

// masterSnapshots is BackupSnapshots on m.
type masterSnapshots struct{ m *Master }

func (s masterSnapshots) CreateSnapshot(ctx context.Context, table, name string) (*tabulapb.Snapshot, error) {
	snap, err := s.m.createSnapshot(ctx, table, name, 0)
	return snap, toStatus(ctx, err)
}

func (s masterSnapshots) SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error) {
	r, err := s.m.findSnapshot(ctx, name)
	return r.Snapshot, toStatus(ctx, err)
}

// DeleteSnapshot deletes a snapshot as deleteSnapshot does (retiring it
// if tables were cloned from it), without its check of the caller's role:
// there is no caller.
func (s masterSnapshots) DeleteSnapshot(ctx context.Context, name string) error {
	term, err := s.m.lead(ctx)
	if err != nil {
		return toStatus(ctx, err)
	}
	r, err := s.m.findSnapshot(ctx, name)
	switch {
	case err != nil:
	case len(r.GetClones()) > 0:
		err = meta.RetireSnapshotRecord(ctx, s.m.cli, s.m.layout, r.Snapshot, r.ModRevision, term.guard())
	default:
		err = meta.DeleteSnapshotRecordAt(ctx, s.m.cli, s.m.layout, r.Snapshot, r.ModRevision, term.guard())
	}
	return toStatus(ctx, err)
}

// scheduleSlot returns the latest slot of s at or before now (0: none
// yet), in unix microseconds.
func scheduleSlot(s *meta.BackupSchedule, now int64) int64 {
	every := s.EverySeconds * 1e6
	if every <= 0 || now < s.Anchor {
		return 0
	}
	return s.Anchor + (now-s.Anchor)/every*every
}

// scheduleNextDue returns when s's next run is due: its latest slot if
// that is not done, else the next one; no earlier than RetryAt.
func scheduleNextDue(s *meta.BackupSchedule, now int64) int64 {
	next := scheduleSlot(s, now)
	if next == 0 {
		next = s.Anchor
	} else if next <= s.DoneSlot {
		next += s.EverySeconds * 1e6
	}
	return max(next, s.RetryAt)
}

// scheduleBackoff is the wait after the n-th failure in a row: the tick,
// doubled per failure, at most the period and maxScheduleRetry.
func scheduleBackoff(tick time.Duration, n int, every time.Duration) time.Duration {
	d := tick
	for i := 1; i < n && d < maxScheduleRetry; i++ {
		d *= 2
	}
	return min(d, every, maxScheduleRetry)
}

// retryBase is the first wait after a failed run: the tick, or its
// default when the loop is off (tests drive the rounds).
func (m *Master) retryBase() time.Duration {
	if m.opts.BackupScheduleInterval > 0 {
		return m.opts.BackupScheduleInterval
	}
	return defaultBackupScheduleInterval
}

// backupScheduleTick runs one round (every BackupScheduleInterval), and
// the sweep of expired snapshots (snapshot_expire.go).
func (m *Master) backupScheduleTick(ctx context.Context, term *leadership) {
	m.expireSnapshots(ctx, term)
	if err := m.runBackupSchedules(ctx, term); err != nil && ctx.Err() == nil {
		m.log.Warn("backup schedules: round failed", "err", err)
	}
}

// runBackupSchedules runs the due backups of every schedule, each on its
// own goroutine, then expires old backups; it returns when all are done.
func (m *Master) runBackupSchedules(ctx context.Context, term *leadership) error {
	if m.opts.BackupRunner == nil {
		return nil
	}
	if !m.stillLeading(term) {
		return ErrNotLeader
	}
	// The runs end with the term, whatever ctx the caller gave.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(term.ctx, cancel)()
	scheds, err := meta.ListBackupSchedules(ctx, m.cli, m.layout)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, s := range scheds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.runSchedule(ctx, term, s)
			m.expireScheduled(ctx, term, s.Table)
		}()
	}
	wg.Wait()
	return nil
}

// runSchedule runs s's due slot, if any: claim, run, record.
func (m *Master) runSchedule(ctx context.Context, term *leadership, s meta.VersionedBackupSchedule) {
	now := m.opts.now().UnixMicro()
	slot := scheduleSlot(&s.BackupSchedule, now)
	if slot == 0 || slot <= s.DoneSlot || now < s.RetryAt {
		return
	}
	// A slot claimed by an earlier term whose outcome is not recorded may
	// have made its backup already: the runner looks for it first.
	var since time.Time
	if s.RunningSlot == slot && s.RunningSince != 0 {
		since = time.UnixMicro(s.RunningSince)
	}
	claimed := s.BackupSchedule
	claimed.RunningSlot = slot
	if since.IsZero() {
		claimed.RunningSince = now
	}
	if _, err := meta.PutBackupSchedule(ctx, m.cli, m.layout, claimed, s.ModRevision, term.guard()); err != nil {
		// Changed by a set or a delete since the list, or the term ended:
		// the next tick sees the record as it is.
		m.log.Info("backup schedule: not claiming the slot", "table", s.Table, "err", err)
		return
	}
	m.log.Info("backup schedule: running", "table", s.Table, "slot", time.UnixMicro(slot).UTC(), "location", s.Location)
	name, runErr := m.opts.BackupRunner.CreateBackup(ctx, s.Table, s.Location, since, masterSnapshots{m})
	if runErr != nil && !m.stillLeading(term) {
		return // the term ended under the run: the next leader runs it again
	}
	end := m.opts.now()
	err := m.updateSchedule(ctx, term, s.Table, func(r *meta.BackupSchedule) {
		r.RunningSlot, r.RunningSince = 0, 0
		if runErr != nil {
			r.Failures++
			r.LastFailure, r.LastError = end.UnixMicro(), runErr.Error()
			wait := scheduleBackoff(m.retryBase(), r.Failures, time.Duration(r.EverySeconds)*time.Second)
			r.RetryAt = end.Add(wait).UnixMicro()
			return
		}
		r.DoneSlot = max(r.DoneSlot, slot)
		r.LastSuccess, r.LastBackup = end.UnixMicro(), name
		r.Failures, r.RetryAt = 0, 0
		for _, b := range r.Backups {
			if b.Name == name {
				return // a resumed backup, recorded by an earlier term
			}
		}
		created := now
		if !since.IsZero() {
			created = since.UnixMicro() // the backup began under the earlier claim
		}
		r.Backups = append(r.Backups, meta.ScheduledBackup{Name: name, Created: created})
	})
	switch {
	case err != nil:
		m.log.Warn("backup schedule: recording a run", "table", s.Table, "backup", name, "run_err", runErr, "err", err)
	case runErr != nil:
		m.log.Warn("backup schedule: run failed", "table", s.Table, "err", runErr)
	default:
		m.log.Info("backup schedule: backup made", "table", s.Table, "backup", name)
	}
}

// expireScheduled deletes table's scheduled backups older than its keep,
// each dropped from the record once deleted.
func (m *Master) expireScheduled(ctx context.Context, term *leadership, table string) {
	// A deposed leader deletes nothing: the record it would correct is no
	// longer its own to write.
	for ctx.Err() == nil && m.stillLeading(term) {
		s, err := meta.GetBackupSchedule(ctx, m.cli, m.layout, table)
		if err != nil || len(s.Backups) == 0 {
			return
		}
		old := s.Backups[0]
		if old.Created+s.KeepSeconds*1e6 > m.opts.now().UnixMicro() {
			return // oldest first: none older
		}
		if err := m.opts.BackupRunner.DeleteBackup(ctx, s.Location, old.Name); err != nil {
			m.log.Warn("backup schedule: deleting an expired backup", "table", table, "backup", old.Name, "err", err)
			_ = m.updateSchedule(ctx, term, table, func(r *meta.BackupSchedule) {
				r.LastFailure, r.LastError = m.opts.now().UnixMicro(), fmt.Sprintf("deleting expired backup %s: %v", old.Name, err)
			})
			return
		}
		m.log.Info("backup schedule: expired backup deleted", "table", table, "backup", old.Name)
		if err := m.updateSchedule(ctx, term, table, func(r *meta.BackupSchedule) {
			for i, b := range r.Backups {
				if b.Name == old.Name {
					r.Backups = append(r.Backups[:i:i], r.Backups[i+1:]...)
					return
				}
			}
		}); err != nil {
			return
		}
	}
}

// errScheduleGone stops updateSchedule when the record was deleted.
var errScheduleGone = errors.New("the backup schedule was deleted")

// updateSchedule applies fn to table's record as it is now and writes it
// under term's guard, reading again after a conflicting write (a set of
// the schedule during a run keeps the run's outcome).
func (m *Master) updateSchedule(ctx context.Context, term *leadership, table string, fn func(*meta.BackupSchedule)) error {
	for range 5 {
		if !m.stillLeading(term) {
			return ErrNotLeader
		}
		cur, err := meta.GetBackupSchedule(ctx, m.cli, m.layout, table)
		if errors.Is(err, meta.ErrNotFound) {
			return errScheduleGone
		}
		if err != nil {
			return err
		}
		fn(&cur.BackupSchedule)
		_, err = meta.PutBackupSchedule(ctx, m.cli, m.layout, cur.BackupSchedule, cur.ModRevision, term.guard())
		if !errors.Is(err, meta.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: the backup schedule of %s kept changing", meta.ErrConflict, table)
}
