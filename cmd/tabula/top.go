package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/client"
)

// The load views of the CLI (docs/OPERATIONS.md "Status page"): size and
// load columns in `tabula servers` and `tabula table tablets`, and `tabula
// top`. The numbers are the leading master's latest load report (one
// every --load-interval, 10s by default); a standby answers zeros.

func printServers(out *printer, servers []client.ServerInfo) error {
	var rows [][]any
	for _, sv := range servers {
		if out.json {
			rows = append(rows, []any{sv.ID, sv.Address, sv.Tablets, sv.SizeBytes, sv.SSTables, sv.ReadsPerSec, sv.WritesPerSec, sv.BusyShare})
			continue
		}
		rows = append(rows, []any{sv.ID, sv.Address, sv.Tablets, sizeText(sv.SizeBytes), sv.SSTables,
			rate(sv.ReadsPerSec), rate(sv.WritesPerSec), fmt.Sprintf("%.0f%%", 100*sv.BusyShare)})
	}
	return out.table([]string{"id", "address", "tablets", "size", "sstables", "reads/s", "writes/s", "busy"}, rows)
}

func printTablets(out *printer, ts []client.TabletInfo) error {
	var rows [][]any
	for _, t := range ts {
		l := t.Load
		if out.json {
			rows = append(rows, []any{t.ID, string(t.Start), string(t.End), t.Server, t.Address, t.Epoch, t.State,
				l.SizeBytes, l.SSTables, l.ReadsPerSec, l.WritesPerSec, l.ReadBytesPerSec + l.WriteBytesPerSec})
			continue
		}
		rows = append(rows, []any{t.ID, keyText(t.Start, "-inf"), keyText(t.End, "+inf"), t.Server, t.Address, t.Epoch, t.State,
			sizeText(l.SizeBytes), l.SSTables, rate(l.ReadsPerSec), rate(l.WritesPerSec), sizeText(int64(l.ReadBytesPerSec + l.WriteBytesPerSec))})
	}
	return out.table([]string{"id", "start", "end", "server", "address", "epoch", "state", "size", "sstables", "reads/s", "writes/s", "bytes/s"}, rows)
}

func newTopCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "top [--by requests|size|bytes] [--n 20] [--interval 2s] [--once]",
		Short: "Show the hottest tablets, refreshing until Ctrl-C (--once: print once)",
		Long: `Print the hottest tablets of the cluster from the leading master's latest
load report (collected every master --load-interval, 10s by default), and
refresh every --interval until Ctrl-C. --by orders them by requests (reads
and writes per second), size, or bytes (read and written per second).
--once prints one table and exits (for scripts).`,
		Example: "  tabula top\n  tabula top --by bytes --n 5 --once",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			by, _ := cmd.Flags().GetString("by")
			n, _ := cmd.Flags().GetInt("n")
			once, _ := cmd.Flags().GetBool("once")
			every, _ := cmd.Flags().GetDuration("interval")
			switch by {
			case "requests", "size", "bytes":
			default:
				return &usageError{cmd: "top", err: fmt.Errorf("--by %q: give requests, size or bytes", by)}
			}
			if !once {
				if every <= 0 {
					return &usageError{cmd: "top", err: fmt.Errorf("--interval must be positive")}
				}
				if err := noDefaultTimeout(cmd); err != nil {
					return err
				}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			clear := !once && !s.out.json && isTerminal(cmd.OutOrStdout())
			for {
				ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
				top, err := s.cli.Admin().TopTablets(ctx, by, n)
				cancel()
				if err != nil {
					if s.ctx.Err() != nil && !once {
						return nil // Ctrl-C
					}
					return wrapf(err, "reading the hottest tablets")
				}
				if clear {
					fmt.Fprint(s.out.w, "\x1b[H\x1b[2J")
				}
				if err := printTop(s.out, top, by); err != nil {
					return err
				}
				if once {
					return nil
				}
				select {
				case <-s.ctx.Done():
					return nil
				case <-time.After(every):
				}
			}
		},
	}
	f := c.Flags()
	f.String("by", "requests", "order by requests (reads+writes/s), size, or bytes (read+written/s)")
	f.Int("n", 20, "how many tablets")
	f.Duration("interval", 2*time.Second, "refresh this often")
	f.Bool("once", false, "print once and exit")
	return c
}

func printTop(out *printer, top client.TopTablets, by string) error {
	if !out.json {
		when := "no load report yet (the leader collects one every --load-interval)"
		if !top.At.IsZero() {
			when = fmt.Sprintf("load report of %s (%s ago)", top.At.Format(time.TimeOnly), time.Since(top.At).Round(time.Second))
		}
		fmt.Fprintf(out.w, "hottest tablets by %s; %s\n", by, when)
		for _, m := range top.Missing {
			fmt.Fprintf(out.w, "not reported: %s\n", m)
		}
	}
	var rows [][]any
	for _, t := range top.Tablets {
		l := t.Load
		if out.json {
			rows = append(rows, []any{t.Table, t.ID, string(t.Start), string(t.End), t.Server, l.RequestsPerSec(), l.ReadsPerSec, l.WritesPerSec,
				l.ReadBytesPerSec + l.WriteBytesPerSec, l.SizeBytes, l.SSTables})
			continue
		}
		rows = append(rows, []any{t.Table, t.ID, keyText(t.Start, "-inf"), keyText(t.End, "+inf"), t.Server, rate(l.RequestsPerSec()),
			rate(l.ReadsPerSec), rate(l.WritesPerSec), sizeText(int64(l.ReadBytesPerSec + l.WriteBytesPerSec)), sizeText(l.SizeBytes), l.SSTables})
	}
	return out.table([]string{"table", "tablet", "start", "end", "server", "requests/s", "reads/s", "writes/s", "bytes/s", "size", "sstables"}, rows)
}

// rate prints a per-second rate with one decimal below 100.
func rate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// sizeText prints bytes in binary units: 0B, 12.0KiB, 3.4GiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
