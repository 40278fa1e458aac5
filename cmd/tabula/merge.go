package main

import (
	"fmt"

	"github.com/spf13/cobra"
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
