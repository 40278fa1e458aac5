package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/cell"
)

// Balancing commands (docs/OPERATIONS.md "Balancing").

func newBalanceCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "balance [--dry-run]",
		Short: "Run one balancing round now, or print the moves it would make",
		Long: `Run one round of the balancer now: the master plans moves that even out the
servers' costs (tablet count, size and recent load, each relative to the
cluster mean) and makes them: at most --balancer-max-moves per round, never a
tablet moved within the master's --balancer-cooldown (default 5 minutes). It
runs even when the automatic balancer is switched off; tables switched off
with "tabula balancer off --table" never move. With --dry-run it only prints
the plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dry, _ := cmd.Flags().GetBool("dry-run")
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			moved, moves, err := s.cli.Admin().BalancePlan(s.ctx, dry)
			if err != nil {
				return wrapf(err, "balancing")
			}
			if len(moves) > 0 {
				var rows [][]any
				for _, m := range moves {
					rows = append(rows, []any{m.Table, m.TabletID, m.From, m.To, m.Reason})
				}
				if err := s.out.table([]string{"table", "tablet", "from", "to", "reason"}, rows); err != nil {
					return err
				}
			}
			switch {
			case dry:
				return s.out.message(fmt.Sprintf("dry run: %d move(s) planned, none made", len(moves)), "planned", len(moves))
			case len(moves) == 0:
				return s.out.message("balanced: no move needed", "moved", 0)
			default:
				return s.out.message(fmt.Sprintf("moved %d of %d planned tablet(s)", moved, len(moves)), "moved", moved)
			}
		},
	}
	c.Flags().Bool("dry-run", false, "only print the moves the round would make")
	return c
}

func newTabletCmd() *cobra.Command {
	c := &cobra.Command{Use: "tablet", Short: "Act on one tablet: move it to another server"}
	c.AddCommand(&cobra.Command{
		Use:   "move TABLE TABLET SERVER",
		Short: "Move a tablet to a tablet server now",
		Long: `Move one tablet (an id from "tabula table tablets TABLE") to a live tablet
server (an id from "tabula servers"): its server flushes and unloads it, then
SERVER loads it. Works whatever the balancer switches say; the balancer then
leaves the tablet where it is for 5 minutes.`,
		Example: "  tabula tablet move users 3f9c2a71e0b4d5c6 ts-2",
		Args:    cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			t, err := s.cli.Admin().MoveTablet(s.ctx, args[0], args[1], args[2])
			if err != nil {
				return wrapf(err, "moving tablet %s of table %s to %s", args[1], args[0], args[2])
			}
			return s.out.message(fmt.Sprintf("tablet %s of table %s is assigned to %s (epoch %d)", t.ID, args[0], t.Server, t.Epoch), "server", t.Server)
		},
	})
	return c
}

func newBalancerCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "balancer on|off|status [--table TABLE]",
		Short: "Switch the automatic balancer on or off (cluster-wide or per table), or show its status",
		Long: `The master's automatic balancer moves tablets between servers every
--balance-interval (docs/OPERATIONS.md "Balancing").
  tabula balancer off               stop it for the whole cluster (kept in etcd: survives failover)
  tabula balancer on                start it again
  tabula balancer off --table T     never move table T's tablets (a dead server's are still reassigned)
  tabula balancer on --table T      let the balancer move T's tablets again
  tabula balancer status            the switches, the last round and the recent moves`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"on", "off", "status"},
		RunE: func(cmd *cobra.Command, args []string) error {
			table, _ := cmd.Flags().GetString("table")
			switch args[0] {
			case "on", "off", "status":
			default:
				return &usageError{cmd: "balancer", err: fmt.Errorf("unknown argument %q: give on, off or status", args[0])}
			}
			if table != "" {
				if err := cell.ValidateTableName(table); err != nil {
					return err
				}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if args[0] == "status" {
				return printBalancerStatus(s, table)
			}
			on := args[0] == "on"
			if err := s.cli.Admin().SetBalancer(s.ctx, table, on); err != nil {
				return wrapf(err, "switching the balancer %s", args[0])
			}
			what := "the cluster"
			if table != "" {
				what = "table " + table
			}
			return s.out.message(fmt.Sprintf("balancer %s for %s", args[0], what), "balancer", args[0])
		},
	}
	c.Flags().String("table", "", "switch (or show) this table's balancing instead of the cluster's")
	return c
}

func printBalancerStatus(s *session, table string) error {
	st, err := s.cli.Admin().Balancer(s.ctx)
	if err != nil {
		return wrapf(err, "reading the balancer's status")
	}
	if table != "" {
		off := false
		for _, t := range st.DisabledTables {
			off = off || t == table
		}
		return s.out.message(fmt.Sprintf("balancer for table %s: %s (cluster: %s)", table, onOff(!off), onOff(st.Enabled)), "balancer", onOff(!off))
	}
	if s.out.json {
		return s.out.object(st)
	}
	interval := "off in the leader's configuration (--balance-interval)"
	if st.Interval > 0 {
		interval = st.Interval.String()
	}
	last := "none yet"
	if !st.LastRound.IsZero() {
		last = st.LastRound.Format(time.RFC3339) + fmt.Sprintf(" (%s ago)", time.Since(st.LastRound).Round(time.Second))
	}
	off := "none"
	if len(st.DisabledTables) > 0 {
		off = strings.Join(st.DisabledTables, ", ")
	}
	fmt.Fprintf(s.out.w, "balancer: %s\ninterval: %s\ntables switched off: %s\nlast round: %s\nmoves made by this leader: %d\n",
		onOff(st.Enabled), interval, off, last, st.MovesMade)
	if len(st.RecentMoves) == 0 {
		return nil
	}
	var rows [][]any
	for _, m := range st.RecentMoves {
		rows = append(rows, []any{m.At.Format(time.RFC3339), m.Table, m.TabletID, m.From, m.To, m.Reason})
	}
	return s.out.table([]string{"at", "table", "tablet", "from", "to", "reason"}, rows)
}

// addBalancerFlags adds the automatic balancer's flags of `tabula master`
// and `tabula dev`.
func addBalancerFlags(c *cobra.Command) {
	c.Flags().Duration("balance-interval", 15*time.Second, "how often the leading master runs a balancing round; 0 turns the automatic balancer off in this process")
	c.Flags().Int("balancer-max-moves", 10, "most tablets one balancing round moves")
	c.Flags().Duration("balancer-cooldown", 5*time.Minute, "how long the balancer leaves a tablet it (or tabula tablet move) just moved")
}

// balanceInterval maps the flag's 0 (off) to master.Options' negative.
func balanceInterval(v *viper.Viper) time.Duration {
	if d := v.GetDuration("balance-interval"); d > 0 {
		return d
	}
	return -1
}

// onOff says a switch's state.
func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
