package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// `tabula table ranges` cuts a table into key ranges of about a target
// size for parallel jobs (client.Table.KeyRanges: SampleRowKeys' samples,
// finer than tablets). It prints START END SIZE lines whose keys are typed
// back as the CLI reads keys (parseBytesArg), so that a line's START,END is
// an export --range argument.

func newTableRangesCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ranges TABLE [--target-size 256MiB] [--start ROW] [--end ROW] [--prefix P]",
		Short: "Cut a table into key ranges of about a target size, for parallel jobs",
		Long: `Print key ranges that together cover the rows in [--start, --end) (or those
starting with --prefix), each holding about --target-size bytes of data, cut at
row keys sampled from the SSTables' indexes (finer than tablets; the samples
SampleRowKeys answers). One line per range: START END SIZE, the keys as the CLI
prints and reads them (Go-quoted when not plain text or holding a comma; "" is
the table's start or end), SIZE in bytes (an estimate: data not yet flushed counts at its tablet's
end). Run one job per line, e.g. tabula export TABLE --range START,END.
With --output json each range is an object {"start", "end", "size_bytes"} (keys
that are not UTF-8 in base64, with start_encoding / end_encoding).`,
		Example: `  tabula table ranges users --target-size 1GiB
  tabula table ranges users --prefix 2026- --target-size 64MiB
  tabula table ranges users | while read -r start end size; do
    tabula export users --range "$start,$end" --file "part-$((i+=1)).jsonl" &
  done; wait`,
		Args: cobra.ExactArgs(1),
		RunE: runTableRanges,
	}
	c.Flags().String("target-size", "256MiB", "about how much data each range holds: a byte count, or with a suffix KiB, MiB, GiB (64MiB, 1GiB)")
	c.Flags().String("start", "", "first row (inclusive; default: the first row)")
	c.Flags().String("end", "", "end row (exclusive; default: past the last row)")
	c.Flags().String("prefix", "", "only rows starting with this prefix (not with --start/--end)")
	return c
}

func runTableRanges(cmd *cobra.Command, args []string) error {
	ts, _ := cmd.Flags().GetString("target-size")
	target, err := parseSize(ts)
	if err != nil {
		return fmt.Errorf("--target-size: %w", err)
	}
	if target <= 0 {
		return cell.Invalidf("--target-size %s is not positive; give about how much data each range holds, e.g. 256MiB", ts)
	}
	var keys [3][]byte
	for i, name := range []string{"start", "end", "prefix"} {
		if v, _ := cmd.Flags().GetString(name); v != "" {
			if keys[i], err = parseBytesArg("--"+name, v, false); err != nil {
				return err
			}
		}
	}
	start, end := keys[0], keys[1]
	if keys[2] != nil {
		if start != nil || end != nil {
			return cell.Invalidf("--prefix cannot be combined with --start or --end; use one or the other")
		}
		start, end = keys[2], client.PrefixEnd(keys[2])
	}
	if len(start) > 0 && len(end) > 0 && string(start) >= string(end) {
		return cell.Invalidf("--start %s is not before --end %s; the range is [start, end)", display(start), display(end))
	}
	s, err := connect(cmd)
	if err != nil {
		return err
	}
	defer s.close()
	ranges, err := s.cli.Open(args[0]).KeyRanges(s.ctx, start, end, target)
	if err != nil {
		return wrapf(err, "cutting %s into ranges", args[0])
	}
	for _, r := range ranges {
		if s.out.json {
			obj := map[string]any{"size_bytes": r.SizeBytes}
			putBytes(obj, "start", r.Start)
			putBytes(obj, "end", r.End)
			err = s.out.object(obj)
		} else {
			_, err = fmt.Fprintf(s.out.w, "%s %s %d\n", rangeKey(r.Start), rangeKey(r.End), r.SizeBytes)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rangeKey prints a range bound as display does, Go-quoted also when it
// holds a comma, so that START,END splits at the one comma between them.
func rangeKey(b []byte) string {
	if bytes.IndexByte(b, ',') >= 0 {
		return rowfilter.Quote(b)
	}
	return display(b)
}
