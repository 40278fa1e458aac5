package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// Snapshot commands (docs/OPERATIONS.md "Snapshots"). They call the
// master's Snapshots service: a snapshot is metadata only, an etcd record
// and, per tablet, a hold beside its files that every deleter honours.

func newSnapshotCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "snapshot",
		Short: "Create, list, describe, delete, clone and restore table snapshots",
		Long: `A snapshot keeps a table's data as it was: it records the table's schema and,
per tablet, the SSTables that held its rows, and no compaction, split, merge,
drop-rows or table deletion removes a file a snapshot holds. It copies
nothing, so it takes time proportional to the tablets, not the bytes. Each
tablet is flushed first: a snapshot holds every write acknowledged before
"snapshot create" started (a write acknowledged while it ran may be in some
tablets' part and not in others': the cut is per tablet, as in HBase).

Deleting a snapshot frees the bytes only it held (see "describe"), once the
tablet servers have released its holds and the master's GC has swept; a
snapshot with clones frees them once no clone names them any more.
"clone" makes a new table from a snapshot and "restore" puts its table back
to it, both sharing its files. Creating, deleting and restoring a snapshot
needs the admin role on its table; listing and describing, read; cloning,
read on its table and admin on the new one.`,
	}
	c.AddCommand(newSnapshotCreateCmd(), newSnapshotListCmd(), newSnapshotDescribeCmd(), newSnapshotDeleteCmd(),
		newSnapshotCloneCmd(), newSnapshotRestoreCmd())
	return c
}

func newSnapshotCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create TABLE NAME",
		Short: "Snapshot a table (every write acknowledged before the command started is in it)",
		Long: `Snapshot a table: every write acknowledged before the command started is in it.
With --expire the snapshot is deleted once that time has passed, by the
master leader (within a minute, its backup schedules' interval), as
"snapshot delete" would: one with clones is retired, its files kept while a
clone names them.`,
		Example: "  tabula snapshot create users users-before-migration\n  tabula snapshot create users users-daily --expire 7d",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			expire, _ := cmd.Flags().GetString("expire")
			life, err := parseExpiry(expire)
			if err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			var expires time.Time
			if life > 0 {
				expires = time.Now().Add(life)
			}
			info, err := s.cli.Admin().CreateSnapshotExpiring(s.ctx, args[0], args[1], expires)
			if err != nil {
				return wrapf(err, "snapshotting table %s", args[0])
			}
			msg := fmt.Sprintf("created snapshot %s of table %s (%d tablets)", info.Name, info.Table, info.Tablets)
			if !info.Expires.IsZero() {
				msg += ", expiring " + formatExpiry(info.Expires.UTC())
			}
			return s.out.message(msg, "created", info.Name)
		},
	}
	c.Flags().String("expire", "", "delete the snapshot after this long: a number of days (7d) or a duration (12h); default never")
	return c
}

func newSnapshotListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [TABLE]",
		Short: "List the snapshots, of one table or of every table",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			table := ""
			if len(args) == 1 {
				table = args[0]
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			snaps, err := s.cli.Admin().ListSnapshots(s.ctx, table)
			if err != nil {
				return wrapf(err, "listing snapshots")
			}
			rows := make([][]any, 0, len(snaps))
			for _, sn := range snaps {
				rows = append(rows, []any{sn.Name, sn.Table, sn.State, sn.Created.UTC().Format(time.RFC3339), formatExpiry(sn.Expires.UTC()), sn.Tablets})
			}
			return s.out.table([]string{"name", "table", "state", "created", "expires", "tablets"}, rows)
		},
	}
}

func newSnapshotDescribeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a snapshot with its sizes: bytes only it holds, and bytes shared with the table or other snapshots",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			d, err := s.cli.Admin().DescribeSnapshot(s.ctx, args[0])
			if err != nil {
				return wrapf(err, "describing snapshot %s", args[0])
			}
			if s.out.json {
				return s.out.object(map[string]any{
					"name": d.Name, "id": d.ID, "table": d.Table, "state": d.State, "created": d.Created.UTC().Format(time.RFC3339Nano),
					"expires": formatExpiry(d.Expires.UTC()),
					"tablets": d.Tablets, "files": d.Files, "bytes": d.Bytes, "exclusive_bytes": d.ExclusiveBytes, "shared_bytes": d.SharedBytes,
				})
			}
			w := s.out.w
			fmt.Fprintf(w, "snapshot %s of table %s (id %s)\n", d.Name, d.Table, d.ID)
			fmt.Fprintf(w, "state: %s\ncreated: %s\nexpires: %s\ntablets: %d\n", d.State, d.Created.UTC().Format(time.RFC3339), formatExpiry(d.Expires.UTC()), d.Tablets)
			fmt.Fprintf(w, "files: %d, %d bytes\n", d.Files, d.Bytes)
			fmt.Fprintf(w, "only this snapshot holds: %d bytes (freed by deleting it)\n", d.ExclusiveBytes)
			fmt.Fprintf(w, "shared with the table or other snapshots: %d bytes\n", d.SharedBytes)
			return nil
		},
	}
}

func newSnapshotDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a snapshot (the bytes only it held are freed by the next GC sweep)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().DeleteSnapshot(s.ctx, args[0]); err != nil {
				return wrapf(err, "deleting snapshot %s", args[0])
			}
			return s.out.message("deleted snapshot "+args[0], "deleted", args[0])
		},
	}
}

func newSnapshotCloneCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clone NAME NEWTABLE",
		Short: "Create a new table serving a snapshot's data at once (files shared, not copied)",
		Long: `Creates NEWTABLE with the snapshot's schema and one tablet per tablet of the
snapshot, serving the snapshot's data as soon as its tablets are placed. No
file is copied: the clone's tablets name the snapshot's files where they lie,
so it takes time proportional to the tablets, not the bytes; the clone's own
writes and compactions write files of its own (copy-on-write). The shared
files stay as long as a clone names them, even after the snapshot or its
table is deleted. Needs read on the snapshot's table and admin on NEWTABLE.`,
		Example: "  tabula snapshot clone users-before-migration users-check",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			info, err := s.cli.Admin().CloneSnapshot(s.ctx, args[0], args[1])
			if err != nil {
				return wrapf(err, "cloning snapshot %s into table %s", args[0], args[1])
			}
			return s.out.message(fmt.Sprintf("created table %s from snapshot %s (%d tablets)", info.Table, args[0], info.Tablets), "created", info.Table)
		},
	}
}

func newSnapshotRestoreCmd() *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "restore NAME [--yes]",
		Short: "Put a snapshot's table back to the snapshot (after a safety snapshot of its current state)",
		Long: `Puts the snapshot's table back to the snapshot. First a safety snapshot of the
table's current state is taken (its name is printed: "failsafe-NAME-TIME",
as HBase's), then the table is deleted and created again as a clone of the
snapshot. If the table no longer exists, it is created again.

What clients see: writes acknowledged before the restore started are in the
safety snapshot; writes acknowledged while it runs may be in it or not, and
are not in the restored table. The new tablets' manifests are written
before the delete; from the delete to the one transaction that creates the
table again, the table does not exist (NOT_FOUND); then its tablets are
placed (UNAVAILABLE until then, which clients retry). A restore that failed midway is finished by running
it again. Refused while the table has deletion protection. Needs admin on
the table. Without --yes it asks for confirmation on the terminal.`,
		Example: "  tabula snapshot restore users-before-migration --yes",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				fmt.Fprintf(cmd.ErrOrStderr(), "restore the table of snapshot %s to it, replacing its current data (kept in a safety snapshot)? [y/N] ", args[0])
				var answer string
				_, _ = fmt.Fscanln(cmd.InOrStdin(), &answer)
				if answer != "y" && answer != "yes" {
					return fmt.Errorf("restore of snapshot %s not confirmed (pass --yes to skip the question)", args[0])
				}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			info, err := s.cli.Admin().RestoreSnapshot(s.ctx, args[0])
			if err != nil {
				return wrapf(err, "restoring snapshot %s", args[0])
			}
			msg := fmt.Sprintf("restored table %s from snapshot %s (%d tablets)", info.Table, args[0], info.Tablets)
			if info.SafetySnapshot != "" {
				msg += fmt.Sprintf("; its state before is snapshot %s", info.SafetySnapshot)
			} else {
				msg += "; the table did not exist, no safety snapshot taken"
			}
			if s.out.json {
				return s.out.object(map[string]any{"restored": info.Table, "snapshot": args[0], "safety_snapshot": info.SafetySnapshot, "tablets": info.Tablets})
			}
			return s.out.message(msg, "restored", info.Table)
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
	return c
}
