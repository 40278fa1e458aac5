package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

func newPutCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "put TABLE ROW FAMILY:QUALIFIER=VALUE... [--timestamp MICROS] [--hex]",
		Short: "Write cells to one row, atomically",
		Long: `Write one or more cells to one row; all of them are applied atomically or none is.
Without --timestamp the server stamps the cells with its clock (microseconds).
ROW, QUALIFIER and VALUE are taken as they are, or Go-quoted when they start and
end with '"', as get and scan print binary bytes ('"\xff\x01"' in the shell;
a quoted qualifier may hold '='), or in hex with --hex.`,
		Example: `  tabula put users alice profile:name=Alice profile:city=Paris
  tabula put users '"id\x00\x01"' 'profile:"a=b"="\xff\xfe"'
  tabula put users 69640001 profile:ff=fe01 --hex`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, _ := cmd.Flags().GetInt64("timestamp")
			if ts < cell.ServerTimestamp {
				return cell.Invalidf("--timestamp %d is negative; give microseconds since the Unix epoch, or -1 for the server's clock", ts)
			}
			hexKeys, _ := cmd.Flags().GetBool("hex")
			row, err := parseBytesArg("ROW", args[1], hexKeys)
			if err != nil {
				return err
			}
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			m := client.NewMutation()
			for _, a := range args[2:] {
				ca, err := parseCellArgTyped("cell", a, hexKeys)
				if err != nil {
					return err
				}
				m.Set(ca.family, ca.qualifier, ts, ca.value)
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Open(args[0]).Apply(s.ctx, row, m); err != nil {
				return wrapf(err, "writing row %s of %s", display(row), args[0])
			}
			return s.out.message(fmt.Sprintf("wrote %d cell(s) to row %s", len(args)-2, display(row)), "cells", len(args)-2)
		},
	}
	c.Flags().Int64("timestamp", cell.ServerTimestamp, "cell timestamp in microseconds since the Unix epoch (default: the server's clock)")
	c.Flags().Bool("hex", false, "ROW, QUALIFIERs and VALUEs are typed in hex (ff01)")
	return c
}

func newAddCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "add TABLE ROW FAMILY:QUALIFIER=DELTA... [--timestamp MICROS]",
		Short: "Add int64s to cells of aggregate families (sum, min, max), atomically",
		Long: `Merge each DELTA, an int64, into the cell FAMILY:QUALIFIER at --timestamp of an
aggregate family (created with type=sum, min or max): a sum family adds it, a
min or max family keeps the smaller or the larger. Reads return one cell per
timestamp holding an 8-byte big-endian int64. An add whose outcome is unknown
(a lost connection) is not retried: it would count twice.`,
		Example: "  tabula add stats page1 hits:views=1 hits:bytes=5120 --timestamp 0",
		Args:    cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, _ := cmd.Flags().GetInt64("timestamp")
			if ts < 0 {
				return cell.Invalidf("--timestamp %d is negative; an aggregate cell is named by a timestamp of 0 or more microseconds", ts)
			}
			row, err := parseBytesArg("ROW", args[1], false)
			if err != nil {
				return err
			}
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			m := client.NewMutation()
			for _, a := range args[2:] {
				ca, err := parseCellArgTyped("cell", a, false)
				if err != nil {
					return err
				}
				n, err := strconv.ParseInt(string(ca.value), 10, 64)
				if err != nil {
					return cell.Invalidf("cell %s:%s: delta %q is not an int64", ca.family, ca.qualifier, ca.value)
				}
				m.AddToCell(ca.family, ca.qualifier, ts, n)
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Open(args[0]).Apply(s.ctx, row, m); err != nil {
				return wrapf(err, "adding to row %s of %s", display(row), args[0])
			}
			return s.out.message(fmt.Sprintf("added to %d cell(s) of row %s", len(args)-2, display(row)), "cells", len(args)-2)
		},
	}
	c.Flags().Int64("timestamp", 0, "timestamp of the aggregate cells in microseconds since the Unix epoch")
	return c
}

// readHelp is the part of get's and scan's help about keys and filters.
const readHelp = `A key typed as the text output prints it, in double quotes ('"\xff\x01"' in
the shell), is Go-unquoted: those are the bytes FF 01; with --hex every key is
hex. The selection flags become one filter, a chain in this order:
--row-regex, --columns, --qualifier-regex, --time-range, --value-regex,
--value-range, --filter, --versions, --cells-per-row, --keys-only. So --filter
sees the cells the flags before it let through, and --versions and
--cells-per-row count what it lets through. The filter language (--filter) is
in docs/FILTERS.md. Cells of an aggregate family (type=sum|min|max) print their
value as a number (with --hex, their 8 bytes).`

func newGetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "get TABLE ROW [--columns ...] [--versions N] [--time-range FROM,TO] [--filter EXPR] [--keys-only] [--hex] ...",
		Short: "Read one row",
		Long:  "Read one row: its cells in read order (family, qualifier, newest first).\n\n" + readHelp,
		Example: "  tabula get users alice --columns profile:name --versions 1 --output json\n" +
			"  tabula get users '\"\\xff\\x01\"' --time-range 2026-12-01T00:00:00Z, --time-format rfc3339\n" +
			"  tabula get users alice --filter 'chain(family(\"log\"), value_regex(\"err.*\"))'",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, opts, view, err := readFlags(cmd)
			if err != nil {
				return err
			}
			row, err := parseBytesArg("ROW", args[1], view.hex)
			if err != nil {
				return err
			}
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			s.out.cellView = view
			if err := describeForRead(s.ctx, s.cli, args[0], spec.cols, &s.out.cellView); err != nil {
				return err
			}
			r, err := s.cli.Open(args[0]).ReadRow(s.ctx, row, opts...)
			if err != nil {
				return wrapf(err, "reading row %s of %s", display(row), args[0])
			}
			if len(r.Cells) == 0 && !s.out.json {
				fmt.Fprintf(cmd.ErrOrStderr(), "row %s not found%s\n", s.out.text(row), escapesHint(args[1], view.hex))
				return nil
			}
			return s.out.cells(r.Cells)
		},
	}
	addReadFlags(c)
	return c
}

// escapesHint is added to "row not found" when the key was typed with
// \xNN escapes but not in quotes, so they were taken as they are.
func escapesHint(arg string, hexKeys bool) string {
	if hexKeys || !strings.Contains(arg, `\x`) || strings.HasPrefix(arg, `"`) {
		return ""
	}
	return fmt.Sprintf(` (the key was taken as it is, backslashes included; for bytes, quote it as the output prints it: '"%s"')`, arg)
}

func newScanCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "scan TABLE [--start ROW] [--end ROW] [--prefix P] [--columns ...] [--versions N] [--time-range FROM,TO] [--filter EXPR] [--limit N] [--reverse] [--keys-only] [--hex] ...",
		Short: "Read a range of rows in key order",
		Long: `Read the rows in [--start, --end) (or those starting with --prefix) in key order,
across every tablet of the table. With --reverse the rows come from the last down
(each row's cells in the usual order), and --limit counts from the last row.
--limit counts rows that have cells left after the filter.

` + readHelp,
		Example: "  tabula scan users --start a --end m --columns profile --versions 1 --limit 10\n" +
			"  tabula scan users --prefix order# --reverse --limit 1   # the highest order# row\n" +
			"  tabula scan users --time-range 2026-12-06T00:00:00Z,2026-12-07T00:00:00Z --value-range 100,200 --keys-only\n" +
			"  tabula scan users --filter 'condition(family(\"flags\"), block(), pass())' --cells-per-row 5",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, opts, view, err := readFlags(cmd)
			if err != nil {
				return err
			}
			rs, err := scanRowSet(cmd)
			if err != nil {
				return err
			}
			limit, _ := cmd.Flags().GetInt64("limit")
			if limit < 0 {
				return cell.Invalidf("--limit %d is negative; give N >= 1, or 0 for no limit", limit)
			}
			if limit > 0 {
				opts = append(opts, client.LimitRows(limit))
			}
			if rev, _ := cmd.Flags().GetBool("reverse"); rev {
				opts = append(opts, client.Reverse())
			}
			s, err := connectLong(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			s.out.cellView = view
			if err := describeForRead(s.ctx, s.cli, args[0], spec.cols, &s.out.cellView); err != nil {
				return err
			}
			// Each row is printed before the next is read.
			opts = append(opts, client.ReuseRows())
			it := s.cli.Open(args[0]).ReadRows(s.ctx, rs, opts...)
			defer it.Close()
			for it.Next() {
				if err := s.out.cells(it.Row().Cells); err != nil {
					return err
				}
			}
			return wrapf(it.Err(), "scanning %s", args[0])
		},
	}
	c.Flags().String("start", "", "first row (inclusive; default: the first row)")
	c.Flags().String("end", "", "end row (exclusive; default: past the last row)")
	c.Flags().String("prefix", "", "only rows starting with this prefix (not with --start/--end)")
	c.Flags().Int64("limit", 0, "at most N rows (0: no limit)")
	c.Flags().Bool("reverse", false, "rows in descending key order, from the last row down")
	addReadFlags(c)
	return c
}

// scanRowSet builds the row set of scan, count and export from --start,
// --end and --prefix, typed as keys are (parseBytesArg; in hex with a
// --hex flag).
func scanRowSet(cmd *cobra.Command) (client.RowSet, error) {
	start, end, err := scanBounds(cmd)
	if err != nil {
		return nil, err
	}
	return client.NewRange(start, end), nil
}

// scanBounds is scanRowSet's range as its start and end (empty end: the
// table's end); --prefix P is [P, the first key after P's rows).
func scanBounds(cmd *cobra.Command) (start, end []byte, err error) {
	hexKeys, _ := cmd.Flags().GetBool("hex") // false where there is no --hex
	var keys [3][]byte
	for i, name := range []string{"start", "end", "prefix"} {
		v, _ := cmd.Flags().GetString(name)
		if v == "" {
			continue
		}
		b, err := parseBytesArg("--"+name, v, hexKeys)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = b
	}
	start, end, prefix := keys[0], keys[1], keys[2]
	if prefix != nil {
		if start != nil || end != nil {
			return nil, nil, cell.Invalidf("--prefix cannot be combined with --start or --end; use one or the other")
		}
		return prefix, client.PrefixEnd(prefix), nil
	}
	if len(start) > 0 && len(end) > 0 && string(start) >= string(end) { // an empty END ("") is the table's end
		return nil, nil, cell.Invalidf("--start %s is not before --end %s; the range is [start, end)", display(start), display(end))
	}
	return start, end, nil
}

func newDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "delete TABLE ROW [FAMILY[:QUALIFIER]] [--timestamp T | --time-range FROM,TO] [--hex]",
		Short: "Delete a whole row, a family of a row, one column of a row, or versions of a column",
		Long: `Delete a whole row, one family of it, or one column (every version written
before the delete). With a column, --timestamp T deletes only the version at T
(HBase shell's delete with a timestamp) and --time-range FROM,TO the versions
with a timestamp in [FROM, TO) (leave TO out for no upper bound); T, FROM and
TO are microseconds since the Unix epoch or RFC 3339 (2026-12-06T19:00:00Z),
as get and scan print them with --time-format.

ROW and QUALIFIER are typed as get and scan print them: as they are, or
Go-quoted when they start and end with '"' ('"\xff\x01"' in the shell is the
bytes FF 01); with --hex each is hex (ff01).`,
		Example: `  tabula delete users alice                 # the whole row
  tabula delete users alice profile         # the family profile of the row
  tabula delete users alice profile:name    # one column
  tabula delete users alice profile:name --timestamp 1700000000000000           # one version
  tabula delete users alice profile:name --time-range 2026-12-01T00:00:00Z,     # versions from then on`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			hexKeys, _ := cmd.Flags().GetBool("hex")
			row, err := rowArg(args[1], hexKeys)
			if err != nil {
				return err
			}
			from, to, timed, err := deleteTimes(cmd)
			if err != nil {
				return err
			}
			m := client.NewMutation()
			what := "row " + display(row)
			switch {
			case len(args) == 3 && strings.Contains(args[2], ":"):
				fam, q, err := parseColumnArg("column", args[2], hexKeys)
				if err != nil {
					return err
				}
				what = fmt.Sprintf("column %s:%s of row %s", fam, display(q), display(row))
				if timed {
					m.DeleteColumnRange(fam, q, from, to)
					what = timeRangeText(from, to) + " of " + what
				} else {
					m.DeleteColumn(fam, q)
				}
			case timed:
				return cell.Invalidf("--timestamp and --time-range delete versions of one column; name it as FAMILY:QUALIFIER (a row or family delete removes every version)")
			case len(args) == 3:
				fam := args[2]
				if err := cell.ValidateFamilyName(fam); err != nil {
					return cell.Invalidf("%q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY or FAMILY:QUALIFIER", args[2], fam)
				}
				m.DeleteFamily(fam)
				what = fmt.Sprintf("family %s of row %s", fam, display(row))
			default:
				m.DeleteRow()
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			if err := s.cli.Open(args[0]).Apply(s.ctx, row, m); err != nil {
				return wrapf(err, "deleting %s of %s", what, args[0])
			}
			return s.out.message("deleted "+what, "deleted", what)
		},
	}
	c.Flags().String("timestamp", "", "delete only the version at this timestamp (microseconds or RFC 3339); needs FAMILY:QUALIFIER")
	c.Flags().String("time-range", "", "delete the versions with a timestamp in [FROM,TO) (each microseconds or RFC 3339; leave TO out for no upper bound); needs FAMILY:QUALIFIER")
	c.Flags().Bool("hex", false, "ROW and QUALIFIER are typed in hex (ff01)")
	return c
}

// deleteTimes reads delete's --timestamp or --time-range as [from, to);
// to 0 is no upper bound (DeleteColumnRange's convention).
func deleteTimes(cmd *cobra.Command) (from, to int64, timed bool, err error) {
	tsFlag, _ := cmd.Flags().GetString("timestamp")
	tr, _ := cmd.Flags().GetString("time-range")
	switch {
	case tsFlag != "" && tr != "":
		return 0, 0, false, cell.Invalidf("give --timestamp or --time-range, not both")
	case tsFlag != "":
		t, err := rowfilter.ParseTime(tsFlag)
		if err != nil {
			return 0, 0, false, cell.Invalidf("--timestamp %q: %v", tsFlag, err)
		}
		if t == math.MaxInt64 {
			return t, 0, true, nil // [MaxInt64, no bound): only that version
		}
		return t, t + 1, true, nil
	case tr != "":
		f, err := parseTimeRange(tr)
		if err != nil {
			return 0, 0, false, err
		}
		return f.TimeStart, f.TimeEnd, true, nil
	}
	return 0, 0, false, nil
}

// timeRangeText names the versions a timed delete removes.
func timeRangeText(from, to int64) string {
	switch {
	case to == from+1:
		return fmt.Sprintf("the version at %d", from)
	case to == 0:
		return fmt.Sprintf("the versions from %d on", from)
	}
	return fmt.Sprintf("the versions in [%d, %d)", from, to)
}

func newCountCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "count TABLE [--start ROW] [--end ROW] [--prefix P]",
		Short: "Count the rows of a table (or of a range)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start, end, err := scanBounds(cmd)
			if err != nil {
				return err
			}
			rs := client.NewRange(start, end)
			s, err := connectLong(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			// One cell per row, without its value, is enough to see the row.
			f := rowfilter.Chain(rowfilter.CellsPerRowLimit(1), rowfilter.StripValue())
			tbl := s.cli.Open(args[0])
			prog := startProgress(cmd, "count")
			defer prog.stop()
			var at func([]byte) float64
			if prog.shown() {
				// How far the count is: its key against the table's samples.
				if samples, err := tbl.SampleRowKeys(s.ctx, client.SampleTargetBytes(8<<20), client.SampleRange(start, end)); err == nil {
					at = keyProgress(samples, start, end)
				}
			}
			var last atomic.Pointer[[]byte]
			if at != nil {
				prog.estimate(func() float64 {
					if k := last.Load(); k != nil {
						return at(*k)
					}
					return 0
				})
			}
			it := tbl.ReadRows(s.ctx, rs, client.WithFilter(f), client.ReuseRows())
			defer it.Close()
			var n int64
			for it.Next() {
				n++
				prog.add(1, 1, 0)
				if at != nil && n%1024 == 0 {
					k := bytes.Clone(it.Row().Key)
					last.Store(&k)
				}
			}
			prog.stop()
			if err := it.Err(); err != nil {
				return wrapf(err, "counting %s", args[0])
			}
			return s.out.message(fmt.Sprint(n), "rows", n)
		},
	}
	c.Flags().String("start", "", "first row (inclusive)")
	c.Flags().String("end", "", "end row (exclusive)")
	c.Flags().String("prefix", "", "only rows starting with this prefix")
	c.Flags().Bool("progress", false, "print progress to stderr every second even when it is not a terminal")
	return c
}
