package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Backup schedules (docs/OPERATIONS.md "Scheduled backups", docs/
// CONTRACTS.md §4): backup-schedules/<table> is a table's schedule, its
// policy and the state of its runs, which the leading master advances
// under its term's guard. A new leader continues from the record.

// BackupSchedulesPrefix returns the prefix of every backup schedule.
func (l Layout) BackupSchedulesPrefix() string { return l.root() + "backup-schedules/" }

// BackupScheduleKey returns the key of table's backup schedule.
func (l Layout) BackupScheduleKey(table string) string { return l.BackupSchedulesPrefix() + table }

// BackupSchedule is the value of backup-schedules/<table>. Times are unix
// microseconds; 0 is never.
type BackupSchedule struct {
	Table    string `json:"table"`
	Location string `json:"location"`
	// EverySeconds is the period; KeepSeconds how long the schedule's
	// backups are kept.
	EverySeconds int64 `json:"every_seconds"`
	KeepSeconds  int64 `json:"keep_seconds"`
	// Anchor is when the schedule was set: its slots are Anchor + k*Every.
	Anchor int64 `json:"anchor"`
	// DoneSlot is the latest slot whose backup was made: no run is started
	// for it or an earlier slot again.
	DoneSlot int64 `json:"done_slot,omitempty"`
	// RunningSlot is the slot a leader claimed and is running (or was,
	// when its term ended: the next leader runs it again, and the backup
	// package completes the unfinished backup instead of starting one).
	RunningSlot int64 `json:"running_slot,omitempty"`
	// RunningSince is when the claim was made: a backup of the table the
	// location completed since then is that run's.
	RunningSince int64  `json:"running_since,omitempty"`
	LastSuccess  int64  `json:"last_success,omitempty"`
	LastBackup   string `json:"last_backup,omitempty"`
	LastFailure  int64  `json:"last_failure,omitempty"`
	LastError    string `json:"last_error,omitempty"`
	// Failures counts the failed runs since the last success; RetryAt is
	// the earliest time of the next attempt after a failure.
	Failures int   `json:"failures,omitempty"`
	RetryAt  int64 `json:"retry_at,omitempty"`
	// Backups are the backups the schedule made and has not expired, oldest
	// first: only these are deleted when older than KeepSeconds.
	Backups []ScheduledBackup `json:"backups,omitempty"`
}

// ScheduledBackup is one backup a schedule made.
type ScheduledBackup struct {
	Name    string `json:"name"`
	Created int64  `json:"created"`
}

// VersionedBackupSchedule is a schedule with its key's ModRevision.
type VersionedBackupSchedule struct {
	BackupSchedule
	ModRevision int64
}

// DecodeBackupSchedule parses a value stored under BackupScheduleKey.
func DecodeBackupSchedule(b []byte) (BackupSchedule, error) {
	var s BackupSchedule
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%w: backup schedule: %v", ErrCorrupt, err)
	}
	return s, nil
}

// PutBackupSchedule writes s, guarded by its key being at ModRevision rev
// (0: absent) and by g; ErrConflict if either fails.
func PutBackupSchedule(ctx context.Context, kv clientv3.KV, l Layout, s BackupSchedule, rev int64, g ...Guard) (int64, error) {
	k := l.BackupScheduleKey(s.Table)
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g...)...).
		Then(clientv3.OpPut(k, mustJSON(s))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("meta: writing the backup schedule of %s: %w", s.Table, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: the backup schedule of %s changed since revision %d (or the guard failed)", ErrConflict, s.Table, rev)
	}
	return resp.Header.Revision, nil
}

// DeleteBackupSchedule deletes table's schedule, guarded by g; ErrNotFound
// if there was none.
func DeleteBackupSchedule(ctx context.Context, kv clientv3.KV, l Layout, table string, g ...Guard) error {
	resp, err := kv.Txn(ctx).If(cmps(nil, g...)...).Then(clientv3.OpDelete(l.BackupScheduleKey(table))).Commit()
	if err != nil {
		return fmt.Errorf("meta: deleting the backup schedule of %s: %w", table, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: deleting the backup schedule of %s: the guard failed", ErrConflict, table)
	}
	if resp.Responses[0].GetResponseDeleteRange().Deleted == 0 {
		return fmt.Errorf("%w: backup schedule of table %s", ErrNotFound, table)
	}
	return nil
}

// GetBackupSchedule reads table's schedule; ErrNotFound if it has none.
func GetBackupSchedule(ctx context.Context, kv clientv3.KV, l Layout, table string) (VersionedBackupSchedule, error) {
	resp, err := kv.Get(ctx, l.BackupScheduleKey(table))
	if err != nil {
		return VersionedBackupSchedule{}, fmt.Errorf("meta: reading the backup schedule of %s: %w", table, err)
	}
	if len(resp.Kvs) == 0 {
		return VersionedBackupSchedule{}, fmt.Errorf("%w: backup schedule of table %s", ErrNotFound, table)
	}
	s, err := DecodeBackupSchedule(resp.Kvs[0].Value)
	return VersionedBackupSchedule{s, resp.Kvs[0].ModRevision}, err
}

// ListBackupSchedules reads every schedule, in table order.
func ListBackupSchedules(ctx context.Context, kv clientv3.KV, l Layout) ([]VersionedBackupSchedule, error) {
	resp, err := kv.Get(ctx, l.BackupSchedulesPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("meta: reading the backup schedules: %w", err)
	}
	out := make([]VersionedBackupSchedule, 0, len(resp.Kvs))
	for _, e := range resp.Kvs {
		if strings.Contains(strings.TrimPrefix(string(e.Key), l.BackupSchedulesPrefix()), "/") {
			continue // a namespaced table's name has no "/": not a schedule
		}
		s, err := DecodeBackupSchedule(e.Value)
		if err != nil {
			return nil, fmt.Errorf("%w (key %s)", err, e.Key)
		}
		out = append(out, VersionedBackupSchedule{s, e.ModRevision})
	}
	return out, nil
}
