package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/backup"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs/backend"
)

// Backup commands (docs/OPERATIONS.md "Backups"): the flags are parsed
// here, the work is package backup's.

func newBackupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "backup",
		Short: "Copy table snapshots to another place, list, verify, delete and restore them",
		Long: `A backup copies a snapshot's SSTables and a self-describing manifest (schema,
tablets with their ranges, each file's size and CRC32C) to a backup location:
a local folder or s3://BUCKET/PREFIX?endpoint=... (credentials from AWS_*, as
--storage). Backups at one location share files: a file the location already
holds with the size and checksum an earlier backup recorded is not copied again,
so a second backup of an unchanged table copies nothing. The manifest is
written last: a backup without it is unfinished ("backup list" says so), and
running "backup create" again completes it without copying the files it had
finished.

"backup create" reads the snapshot's files from the cluster's storage, given
with --storage (the tablet servers' --data root on a shared disk, or their
object store URL).`,
	}
	c.AddCommand(newBackupCreateCmd(), newBackupListCmd(), newBackupDescribeCmd(), newBackupDeleteCmd(),
		newBackupVerifyCmd(), newBackupRestoreCmd(), newBackupScheduleCmd())
	return c
}

// backupKillAfterEnv, for tests only, kills the process with SIGKILL after
// that many files were copied (a crash at a point the test chooses).
const backupKillAfterEnv = "TABULA_BACKUP_TEST_KILL_AFTER"

// parseExpiry parses --expire: a Go duration or a number of days ("30d").
func parseExpiry(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, ok := parseDaysOrDuration(s)
	if !ok {
		return 0, cell.Invalidf("--expire %q: want a number of days (30d) or a duration (12h)", s)
	}
	return d, nil
}

// parseDaysOrDuration parses a positive number of days ("30d") or Go
// duration ("12h").
func parseDaysOrDuration(s string) (time.Duration, bool) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		return time.Duration(n) * 24 * time.Hour, err == nil && n > 0
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func newBackupCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create TABLE --to LOCATION --storage STORAGE",
		Short: "Back up a table: snapshot it, copy the files the location lacks, write the manifest",
		Example: `  tabula backup create users --to /mnt/backups --storage /var/lib/tabula/data
  tabula backup create users --to 's3://backups/prod?endpoint=http://10.0.0.5:8333' \
      --storage 's3://tabula?endpoint=http://10.0.0.5:8333' --expire 30d`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to, _ := cmd.Flags().GetString("to")
			v, err := settings(cmd)
			if err != nil {
				return err
			}
			storage := v.GetString("storage") // also TABULA_STORAGE or the config file's, as the servers read it
			snap, _ := cmd.Flags().GetString("snapshot")
			workers, _ := cmd.Flags().GetInt("workers")
			expire, _ := cmd.Flags().GetString("expire")
			if to == "" || storage == "" {
				return cell.Invalidf("backup create needs --to (the backup location) and --storage (the cluster's storage)")
			}
			exp, err := parseExpiry(expire)
			if err != nil {
				return err
			}
			s, loc, done, err := connectWithLocation(cmd, to)
			if err != nil {
				return err
			}
			defer done()
			src, root, err := backend.Open(s.ctx, storage, "") // read only: no spool
			if err != nil {
				return fmt.Errorf("--storage: %w", err)
			}
			p := startProgress(cmd, "backup")
			var total, seen atomic.Int64
			p.estimate(func() float64 {
				if t := total.Load(); t > 0 {
					return float64(seen.Load()) / float64(t)
				}
				return -1
			})
			var killAfter, copied int64 = -1, 0
			if v := os.Getenv(backupKillAfterEnv); v != "" {
				killAfter, _ = strconv.ParseInt(v, 10, 64)
			}
			res, err := backup.Create(s.ctx, backup.CreateOptions{
				Table: args[0], To: loc, Source: src, SourceRoot: root, Cluster: s.cli.Admin(),
				Snapshot: snap, Expire: exp, Workers: workers,
				OnPlan:  func(_ int, bytes int64) { total.Store(bytes) },
				OnBytes: func(n int64) { seen.Add(n); p.add(0, 0, n) },
				OnCopied: func(string) {
					if copied++; copied == killAfter {
						if self, err := os.FindProcess(os.Getpid()); err == nil {
							_ = self.Kill() // SIGKILL: no deferred call runs
						}
					}
				},
			})
			p.stop()
			if res != nil && res.Manifest != nil {
				m := res.Manifest
				msg := fmt.Sprintf("backed up table %s as %s at %s: %d tablets, %d files, %d bytes; copied %d files (%d bytes), %d present already, %d from an interrupted run",
					m.Table, m.Name, loc, len(m.Tablets), len(m.Files), m.Bytes(), res.Copied, res.CopiedBytes, res.Present, res.Resumed)
				if res.ResumedBackup != "" {
					msg += " (completed the unfinished backup)"
				}
				if s.out.json {
					if oerr := s.out.object(map[string]any{"name": m.Name, "table": m.Table, "tablets": len(m.Tablets), "files": len(m.Files),
						"bytes": m.Bytes(), "copied_files": res.Copied, "copied_bytes": res.CopiedBytes, "present_files": res.Present,
						"resumed_files": res.Resumed, "resumed_backup": res.ResumedBackup}); oerr != nil {
						return oerr
					}
				} else {
					fmt.Fprintln(s.out.w, msg)
				}
			}
			if err != nil {
				return wrapf(err, "backing up table %s", args[0])
			}
			return nil
		},
	}
	c.Flags().String("to", "", "backup location: a local folder or s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT")
	c.Flags().String("storage", "", "the cluster's storage, where the snapshot's files are read: the tablet servers' --data root (a shared disk) or their --storage URL (env TABULA_STORAGE)")
	c.Flags().String("snapshot", "", "back up this ready snapshot of the table (kept afterwards) instead of taking one")
	c.Flags().String("expire", "", "record an expiry: a number of days (30d) or a duration (12h); backup delete --expired removes it after that")
	c.Flags().Int("workers", 4, "files copied at once")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

// connectWithLocation connects to the cluster (no default deadline) and
// opens the backup location spec; done closes both.
func connectWithLocation(cmd *cobra.Command, spec string) (*session, *backup.Location, func(), error) {
	s, err := connectLong(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	loc, done, err := backup.OpenSpooled(s.ctx, spec)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	return s, loc, func() { done(); s.close() }, nil
}

// backupSession is a session without a cluster and the location of --at.
func backupSession(cmd *cobra.Command) (*session, *backup.Location, func(), error) {
	at, _ := cmd.Flags().GetString("at")
	if at == "" {
		return nil, nil, nil, cell.Invalidf("give the backup location with --at")
	}
	s, err := sessionLong(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	loc, done, err := backup.OpenSpooled(s.ctx, at)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	return s, loc, func() { done(); s.close() }, nil
}

func atFlag(c *cobra.Command) {
	c.Flags().String("at", "", "backup location: a local folder or s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT")
}

func formatExpiry(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339)
}

func newBackupListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list --at LOCATION",
		Short: "List the backups at a location: table, time, size, expiry, complete or unfinished",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, loc, done, err := backupSession(cmd)
			if err != nil {
				return err
			}
			defer done()
			infos, err := backup.List(loc)
			if err != nil {
				return err
			}
			rows := make([][]any, 0, len(infos))
			for _, in := range infos {
				state := "complete"
				if !in.Complete {
					state = "unfinished"
				}
				rows = append(rows, []any{in.Name, in.Table, in.Created.Format(time.RFC3339), in.Bytes, formatExpiry(in.Expires), state})
			}
			return s.out.table([]string{"name", "table", "created", "bytes", "expires", "state"}, rows)
		},
	}
	atFlag(c)
	return c
}

func newBackupDescribeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "describe NAME --at LOCATION",
		Short: "Show a backup's tablets, files and bytes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, loc, done, err := backupSession(cmd)
			if err != nil {
				return err
			}
			defer done()
			m, err := backup.Describe(loc, args[0])
			if err != nil {
				return err
			}
			if s.out.json {
				tablets := make([]map[string]any, 0, len(m.Tablets))
				for _, t := range m.Tablets {
					tablets = append(tablets, map[string]any{"id": t.ID, "start": string(t.State.RangeStart), "end": string(t.State.RangeEnd), "files": len(t.State.Files)})
				}
				return s.out.object(map[string]any{"name": m.Name, "table": m.Table, "snapshot": m.Snapshot,
					"created": time.UnixMicro(m.CreatedMicros).UTC().Format(time.RFC3339Nano), "tablets": tablets,
					"files": len(m.Files), "bytes": m.Bytes()})
			}
			w := s.out.w
			fmt.Fprintf(w, "backup %s of table %s (snapshot %s)\n", m.Name, m.Table, m.Snapshot)
			fmt.Fprintf(w, "created: %s\n", time.UnixMicro(m.CreatedMicros).UTC().Format(time.RFC3339))
			if m.ExpiresMicros != 0 {
				fmt.Fprintf(w, "expires: %s\n", time.UnixMicro(m.ExpiresMicros).UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(w, "files: %d, %d bytes\ntablets: %d\n", len(m.Files), m.Bytes(), len(m.Tablets))
			for _, t := range m.Tablets {
				fmt.Fprintf(w, "  %s [%q, %q): %d files\n", t.ID, t.State.RangeStart, t.State.RangeEnd, len(t.State.Files))
			}
			return nil
		},
	}
	atFlag(c)
	return c
}

func newBackupDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "delete (NAME | --expired) --at LOCATION",
		Short: "Delete a backup: its manifest and the files no other backup at the location names",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			expired, _ := cmd.Flags().GetBool("expired")
			if expired == (len(args) == 1) {
				return cell.Invalidf("give a backup NAME or --expired")
			}
			s, loc, done, err := backupSession(cmd)
			if err != nil {
				return err
			}
			defer done()
			names := args
			if expired {
				infos, err := backup.List(loc)
				if err != nil {
					return err
				}
				for _, in := range infos {
					if in.Complete && !in.Expires.IsZero() && in.Expires.Before(time.Now()) {
						names = append(names, in.Name)
					}
				}
			}
			for _, n := range names {
				r, err := backup.Delete(s.ctx, loc, n)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.out.w, "deleted backup %s (%d files, %d bytes no other backup names)\n", n, r.Files, r.Bytes)
			}
			return nil
		},
	}
	atFlag(c)
	c.Flags().Bool("expired", false, "delete every complete backup whose expiry has passed")
	return c
}

func newBackupVerifyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "verify NAME --at LOCATION",
		Short: "Read every file of a backup and check its size and CRC32C; name each damaged or missing file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			workers, _ := cmd.Flags().GetInt("workers")
			s, loc, done, err := backupSession(cmd)
			if err != nil {
				return err
			}
			defer done()
			p := startProgress(cmd, "verify")
			rep, err := backup.Verify(s.ctx, loc, args[0], workers, func(n int64) { p.add(0, 0, n) })
			p.stop()
			if err != nil {
				return err
			}
			for _, d := range rep.Damaged {
				fmt.Fprintf(s.out.w, "damaged: %s: %s\n", d.Path, d.Problem)
			}
			if len(rep.Damaged) > 0 {
				return fmt.Errorf("backup %s: %d of %d files damaged or missing", args[0], len(rep.Damaged), rep.Files)
			}
			fmt.Fprintf(s.out.w, "backup %s: %d files, %d bytes, every checksum matches\n", args[0], rep.Files, rep.Bytes)
			return nil
		},
	}
	atFlag(c)
	c.Flags().Int("workers", 4, "files read at once")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

func newBackupRestoreCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "restore --from LOCATION/BACKUP NEWTABLE",
		Short: "Create a new table with a backup's schema and tablet boundaries and write every cell of the backup into it",
		Long: `Restore creates NEWTABLE (it must not exist) in the cluster of --master, with the
backup's families, split threshold and tablet boundaries, and writes into it every
cell the backup holds, at its timestamp: each tablet's files are fetched into a
scratch folder (--scratch; one tablet's files at a time), their sizes and CRC32C
checked, read there by the engine, and the rows written through the table's write
path. The cluster may be another than the one backed up. The new table equals
the source table at the snapshot, cell for cell.`,
		Example: `  tabula backup restore --from /mnt/backups/users.20261207T011600Z users_restored
  tabula backup restore --from 's3://backups/prod/users.20261207T011600Z?endpoint=http://10.0.0.5:8333' users_restored`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, _ := cmd.Flags().GetString("from")
			scratch, _ := cmd.Flags().GetString("scratch")
			locSpec, name, err := splitBackupSpec(from)
			if err != nil {
				return err
			}
			s, loc, done, err := connectWithLocation(cmd, locSpec)
			if err != nil {
				return err
			}
			defer done()
			p := startProgress(cmd, "restore")
			res, err := backup.Restore(s.ctx, backup.RestoreOptions{From: loc, Name: name, Table: args[0], Client: s.cli, ScratchDir: scratch,
				OnRows: func(rows, cells int64) { p.add(rows, cells, 0) }})
			p.finish("restored", err)
			if err != nil {
				return wrapf(err, "restoring %s into table %s", name, args[0])
			}
			return s.out.message(fmt.Sprintf("restored backup %s into table %s: %d tablets, %d rows, %d cells", name, args[0], res.Tablets, res.Rows, res.Cells), "restored", args[0])
		},
	}
	c.Flags().String("from", "", "the backup: its location followed by /NAME (s3://BUCKET/PREFIX/NAME?endpoint=..., or /path/NAME)")
	c.Flags().String("scratch", "", "local folder for one tablet's files while they are read (default: the system's temporary folder)")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}

// splitBackupSpec splits LOCATION/NAME (an s3:// URL's query stays with
// the location).
func splitBackupSpec(spec string) (string, string, error) {
	base, query, _ := strings.Cut(spec, "?")
	base = strings.TrimRight(base, "/")
	i := strings.LastIndexByte(base, '/')
	if i <= 0 || i == len(base)-1 || strings.HasSuffix(base[:i], ":/") {
		return "", "", cell.Invalidf("--from %q: want LOCATION/BACKUP, e.g. /mnt/backups/users.20261207T011600Z", spec)
	}
	loc := base[:i]
	if query != "" {
		loc += "?" + query
	}
	return loc, base[i+1:], nil
}
