package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
)

// The table commands that act on a table's tablets where they are served:
// split and flush (compact and drop-rows are in admin.go).

func newTableSplitCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "split TABLE [ROW] [--tablet ID | --holding ROW | --all]",
		Short: "Split a tablet at ROW, or at its size midpoint",
		Long: `With ROW, split the tablet holding ROW at ROW (ROW starts the right half).
Without ROW, split one tablet at its size midpoint, the row its server picks
from its SSTable indexes (flushing the memtable first when they hold nothing),
as the automatic split does: the tablet --tablet ID names (the ID as
` + "`tabula table tablets TABLE`" + ` prints it), or the one holding --holding ROW, or
the table's only tablet. A tablet too small to cut (one row, say) has no
midpoint: split it at a row instead. --all splits every tablet of the table
at its midpoint, skipping those too small (HBase shell's split 'TABLE');
split 'TABLE', 'ROW' is ` + "`tabula table split TABLE ROW`" + `. The automatic merge keeps
the boundaries made here.

ROW is typed as get and scan print it: as it is, or Go-quoted when it starts
and ends with '"' ('"\xff\x01"' in the shell); with --hex in hex.`,
		Example: "  tabula table split users m                    # at row m\n" +
			"  tabula table split users                      # its only tablet, at the size midpoint\n" +
			"  tabula table split users --tablet 0a1b2c3d4e5f6a7b\n" +
			"  tabula table split users --holding alice      # the tablet holding alice, at its midpoint\n" +
			"  tabula table split users --all                # every tablet, at its midpoint",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			hexKeys, _ := cmd.Flags().GetBool("hex")
			id, _ := cmd.Flags().GetString("tablet")
			holding, _ := cmd.Flags().GetString("holding")
			all, _ := cmd.Flags().GetBool("all")
			var row, in []byte
			var err error
			if all && (id != "" || holding != "" || len(args) == 2) {
				return cell.Invalidf("--all splits every tablet; give it without ROW, --tablet or --holding")
			}
			if len(args) == 2 {
				if id != "" || holding != "" {
					return cell.Invalidf("give ROW to split at it, or --tablet / --holding to split at a size midpoint, not both")
				}
				if row, err = rowArg(args[1], hexKeys); err != nil {
					return err
				}
			}
			if holding != "" {
				if id != "" {
					return cell.Invalidf("give --tablet ID or --holding ROW, not both")
				}
				if in, err = parseBytesArg("--holding", holding, hexKeys); err != nil {
					return err
				}
				if err := cell.ValidateRow(in); err != nil {
					return err
				}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if all {
				return splitAll(s, args[0])
			}
			if row != nil {
				if err := s.cli.Admin().SplitTablet(s.ctx, args[0], row); err != nil {
					return wrapf(err, "splitting %s at %s", args[0], display(row))
				}
				return s.out.message(fmt.Sprintf("split %s at %s", args[0], display(row)), "split", string(row))
			}
			children, err := s.cli.Admin().SplitTabletMidpoint(s.ctx, args[0], id, in)
			if err != nil {
				return splitError(err, args[0], id, in)
			}
			if len(children) != 2 {
				return fmt.Errorf("splitting %s: the master answered %d tablets, not the two children", args[0], len(children))
			}
			at := children[1].Start
			if s.out.json {
				return s.out.object(map[string]any{"split": string(at), "left": children[0].ID, "right": children[1].ID})
			}
			return s.out.message(fmt.Sprintf("split %s at %s (its size midpoint): tablets %s and %s", args[0], display(at), children[0].ID, children[1].ID), "split", string(at))
		},
	}
	c.Flags().String("tablet", "", "split this tablet (its ID as `tabula table tablets` prints it) at its size midpoint")
	c.Flags().String("holding", "", "split the tablet holding this row at its size midpoint")
	c.Flags().Bool("all", false, "split every tablet of the table at its size midpoint (those too small are left)")
	c.Flags().Bool("hex", false, "ROW and --holding are typed in hex (ff01)")
	return c
}

// splitAll splits each tablet of table, as listed when it starts, at its
// size midpoint; a tablet with none (too little data) is left as it is.
func splitAll(s *session, table string) error {
	ts, err := s.cli.Admin().Tablets(s.ctx, table)
	if err != nil {
		return wrapf(err, "listing the tablets of %s", table)
	}
	split, small := 0, 0
	for _, t := range ts {
		if _, err := s.cli.Admin().SplitTabletMidpoint(s.ctx, table, t.ID, nil); err != nil {
			if msg, _ := explain(err); strings.Contains(msg, "no split key") {
				small++
				continue
			}
			return wrapf(err, "splitting tablet %s of %s at its size midpoint (%d of %d split before it)", t.ID, table, split, len(ts))
		}
		split++
	}
	if s.out.json {
		return s.out.object(map[string]any{"split": split, "tablets": len(ts), "too_small": small})
	}
	return s.out.message(fmt.Sprintf("split %d of %d tablet(s) of %s at their size midpoints; %d too small to split", split, len(ts), table, small), "", nil)
}

// splitError names the fix when a midpoint split is refused: a table of
// several tablets needs one named, and a tablet too small has no midpoint.
func splitError(err error, table, id string, in []byte) error {
	what := "splitting " + table + " at a size midpoint"
	switch {
	case id != "":
		what = fmt.Sprintf("splitting tablet %s of %s at its size midpoint", id, table)
	case in != nil:
		what = fmt.Sprintf("splitting the tablet of %s holding %s at its size midpoint", table, display(in))
	}
	msg, _ := explain(err)
	switch {
	case strings.Contains(msg, "no split key"):
		return cell.Invalidf("%s: the tablet holds too little data to have a size midpoint (one row, or nothing written); split it at a row instead: tabula table split %s ROW", what, table)
	case strings.Contains(msg, "tablets; name the one"):
		return cell.Invalidf("%s: table %s has several tablets; name one with --tablet ID (`tabula table tablets %s` lists them) or --holding ROW, split them all with --all, or split at a row: tabula table split %s ROW", what, table, table, table)
	}
	return wrapf(err, "%s", what)
}

func newTableFlushCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "flush TABLE",
		Short: "Write every tablet's memtable of a table to SSTables",
		Long: `Ask the server of every tablet of TABLE to write its memtable to SSTables now
(HBase shell's flush 'TABLE'), instead of waiting for the memtable to fill.
Writes acknowledged before the command are then in SSTables (a restart need not
replay them from the commit log). Needs the admin role on the table. Exits 1
if any tablet could not be flushed (not assigned yet, say), after trying all.`,
		Example: "  tabula table flush users",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Admin().FlushTable(s.ctx, args[0]); err != nil {
				return wrapf(err, "flushing %s", args[0])
			}
			return s.out.message("flushed "+args[0], "flushed", args[0])
		},
	}
}
