package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/master"
)

// newTableMergeCmd is `tabula table merge TABLE START END`.
func newTableMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "merge TABLE START END",
		Short: "Merge the tablets overlapping [START, END) into one (no data is copied)",
		Long: `Merge the tablets of TABLE that overlap the rows [START, END) into one
tablet. An empty END ("") is the end of the table, an empty START its start.
The merged tablet references its parents' files until its compactions
rewrite them; no data is copied.

This command may merge across the table's user split keys (the split keys
given at creation and rows given to "tabula table split"): you asked for
it. Those boundaries are then forgotten. The automatic merge never crosses
them.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			t, n, err := s.cli.Admin().MergeTablets(s.ctx, args[0], []byte(args[1]), []byte(args[2]))
			if err != nil {
				return wrapf(err, "merging the tablets of %s in [%q, %q)", args[0], args[1], args[2])
			}
			msg := fmt.Sprintf("merged %d tablet(s) of %s into %s [%s, %s)", n+1, args[0], t.ID, keyText(t.Start, "-inf"), keyText(t.End, "+inf"))
			return s.out.message(msg, "merged", t.ID)
		},
	}
}

// newTableAutoMergeCmd is `tabula table auto-merge TABLE on|off`.
func newTableAutoMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:       "auto-merge TABLE on|off",
		Short:     "Switch the automatic merge of small, cold tablets on or off for a table",
		Long:      "Switch the automatic merge of small, cold adjacent tablets on or off for TABLE\n(the cluster-wide switch is the master's --auto-merge flag). `tabula table\ndescribe TABLE` shows the table's switch.",
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"on", "off"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[1] != "on" && args[1] != "off" {
				return &usageError{cmd: "table auto-merge", err: fmt.Errorf("unknown switch %q: give on or off", args[1])}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			on := args[1] == "on"
			if err := s.cli.Admin().SetAutoMerge(s.ctx, args[0], on); err != nil {
				return wrapf(err, "switching the automatic merge of %s %s", args[0], args[1])
			}
			return s.out.message(fmt.Sprintf("automatic merge of %s: %s", args[0], args[1]), "auto_merge", on)
		},
	}
}

// addMergeFlags adds the automatic merge's flags to the master command.
func addMergeFlags(c *cobra.Command) {
	f := c.Flags()
	f.Bool("auto-merge", true, "merge small, cold adjacent tablets automatically (docs/OPERATIONS.md \"Merges\"); a table opts out with auto_merge_disabled")
	f.Duration("auto-merge-interval", time.Minute, "how often the leader looks for tablets to merge")
	f.Duration("auto-merge-window", 10*time.Minute, "how long two tablets must stay small and cold before they merge")
	f.Duration("auto-merge-split-cooldown", 30*time.Minute, "a tablet the leader first saw less than this ago (a fresh split child) is not merged")
	f.Float64("auto-merge-max-rps", 1, "two tablets merge only while their combined requests per second stay below this")
	f.Float64("auto-merge-size-fraction", 0.25, "two tablets merge only while their combined size stays below this fraction of the split threshold")
}

// mergeOptions reads the flags of addMergeFlags.
func mergeOptions(v *viper.Viper) master.MergeOptions {
	return master.MergeOptions{
		Disabled:          !v.GetBool("auto-merge"),
		Interval:          v.GetDuration("auto-merge-interval"),
		Window:            v.GetDuration("auto-merge-window"),
		SplitCooldown:     v.GetDuration("auto-merge-split-cooldown"),
		MaxRequestsPerSec: v.GetFloat64("auto-merge-max-rps"),
		SizeFraction:      v.GetFloat64("auto-merge-size-fraction"),
	}
}
