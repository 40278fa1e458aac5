package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/client"
)

// tabula backup schedule: the master's scheduled backups
// (docs/OPERATIONS.md "Scheduled backups").

func newBackupScheduleCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "schedule TABLE --every 24h --keep 7d --to LOCATION",
		Short: "Back a table up every so often from the master, deleting its backups older than --keep",
		Long: `Sets (or replaces) a table's backup schedule. The leading master makes a backup
of the table at once and then every --every, at --to (an absolute path on the
masters' machines, or s3://BUCKET/PREFIX?endpoint=... with the credentials the
masters read for --storage), and deletes the backups the schedule made once
older than --keep (never other backups at the location). A failed run is
retried with a growing wait and shown by "backup schedule list". The schedule
lives in etcd: another master that takes over continues it. Needs admin on the
table; the masters must have --storage (or --storage-root).`,
		Example: `  tabula backup schedule users --every 24h --keep 7d --to /mnt/backups
  tabula backup schedule users --every 6h --keep 30d --to 's3://backups/prod?endpoint=http://10.0.0.5:8333'
  tabula backup schedule list
  tabula backup schedule delete users`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			to, _ := f.GetString("to")
			everyS, _ := f.GetString("every")
			keepS, _ := f.GetString("keep")
			if to == "" || everyS == "" || keepS == "" {
				return &usageError{cmd: "backup schedule", err: fmt.Errorf("give --every (24h, 1d), --keep (7d) and --to (the backup location)")}
			}
			every, err := parseSchedulePeriod("every", everyS)
			if err != nil {
				return err
			}
			keep, err := parseSchedulePeriod("keep", keepS)
			if err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			sc, err := s.cli.Admin().SetBackupSchedule(s.ctx, args[0], to, every, keep)
			if err != nil {
				return wrapf(err, "scheduling backups of table %s", args[0])
			}
			return s.out.message(fmt.Sprintf("table %s is backed up every %v to %s, each kept %v; next backup %s",
				sc.Table, sc.Every, sc.Location, sc.Keep, sc.NextDue.UTC().Format(time.RFC3339)), "table", sc.Table)
		},
	}
	c.Flags().String("every", "", "how often: a duration (6h) or a number of days (1d); at least 1m")
	c.Flags().String("keep", "", "how long the schedule keeps each of its backups: a duration or days (7d); at least --every")
	c.Flags().String("to", "", "backup location: an absolute path on the masters' machines or s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT")
	c.AddCommand(newBackupScheduleListCmd(), newBackupScheduleDeleteCmd())
	return c
}

// parseSchedulePeriod parses --every and --keep: a Go duration or a
// number of days, in whole seconds.
func parseSchedulePeriod(flag, s string) (time.Duration, error) {
	d, ok := parseDaysOrDuration(s)
	if !ok {
		return 0, &usageError{cmd: "backup schedule", err: fmt.Errorf("--%s %q: want a duration (12h, 90m) or a number of days (7d)", flag, s)}
	}
	if d%time.Second != 0 {
		return 0, &usageError{cmd: "backup schedule", err: fmt.Errorf("--%s %v: give whole seconds", flag, d)}
	}
	return d, nil
}

func newBackupScheduleListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the backup schedules: table, every, keep, location, last success, last failure and its error, next run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			scheds, err := s.cli.Admin().ListBackupSchedules(s.ctx)
			if err != nil {
				return wrapf(err, "listing backup schedules")
			}
			rows := make([][]any, 0, len(scheds))
			for _, sc := range scheds {
				rows = append(rows, []any{sc.Table, sc.Every.String(), sc.Keep.String(), sc.Location,
					scheduleTime(sc.LastSuccess), dash(sc.LastBackup), scheduleTime(sc.LastFailure), sc.Failures,
					dash(sc.LastError), scheduleNext(sc), len(sc.Backups)})
			}
			return s.out.table([]string{"table", "every", "keep", "location", "last_success", "last_backup",
				"last_failure", "failures", "last_error", "next", "backups"}, rows)
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func scheduleTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func scheduleNext(sc client.BackupSchedule) string {
	if sc.Running {
		return "running"
	}
	return scheduleTime(sc.NextDue)
}

func newBackupScheduleDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete TABLE",
		Short: "Stop a table's scheduled backups (the backups made stay at their location)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().DeleteBackupSchedule(s.ctx, args[0]); err != nil {
				return wrapf(err, "deleting the backup schedule of table %s", args[0])
			}
			return s.out.message("deleted the backup schedule of table "+args[0], "deleted", args[0])
		},
	}
}
