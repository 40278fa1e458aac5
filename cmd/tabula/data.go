package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

func newPutCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "put TABLE ROW FAMILY:QUALIFIER=VALUE... [--timestamp MICROS]",
		Short: "Write cells to one row, atomically",
		Long: `Write one or more cells to one row; all of them are applied atomically or none is.
Without --timestamp the server stamps the cells with its clock (microseconds).`,
		Example: "  tabula put users alice profile:name=Alice profile:city=Paris",
		Args:    cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, _ := cmd.Flags().GetInt64("timestamp")
			if ts < cell.ServerTimestamp {
				return cell.Invalidf("--timestamp %d is negative; give microseconds since the Unix epoch, or -1 for the server's clock", ts)
			}
			row := []byte(args[1])
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			m := client.NewMutation()
			for _, a := range args[2:] {
				ca, err := parseCellArg(a)
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
			row := []byte(args[1])
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			m := client.NewMutation()
			for _, a := range args[2:] {
				ca, err := parseCellArg(a)
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

func addReadFlags(c *cobra.Command) {
	c.Flags().StringSlice("columns", nil, "only these columns: FAMILY or FAMILY:QUALIFIER, comma-separated")
	c.Flags().Int("versions", 0, "only the newest N versions of each column (0: all)")
	c.Flags().String("row-regex", "", "only rows whose whole key matches this RE2 pattern (on bytes: any byte may appear)")
	c.Flags().String("qualifier-regex", "", "only cells whose whole qualifier matches this RE2 pattern")
	c.Flags().String("value-regex", "", "only cells whose whole value matches this RE2 pattern (before --versions counts)")
}

func readOptions(cmd *cobra.Command) ([]client.ReadOption, error) {
	items, _ := cmd.Flags().GetStringSlice("columns")
	versions, _ := cmd.Flags().GetInt("versions")
	cols, err := parseColumns(items)
	if err != nil {
		return nil, err
	}
	var re regexes
	re.row, _ = cmd.Flags().GetString("row-regex")
	re.qualifier, _ = cmd.Flags().GetString("qualifier-regex")
	re.value, _ = cmd.Flags().GetString("value-regex")
	f, err := readFilter(cols, re, versions)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, nil
	}
	return []client.ReadOption{client.WithFilter(f)}, nil
}

func newGetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "get TABLE ROW [--columns ...] [--versions N] [--row-regex RE] [--qualifier-regex RE] [--value-regex RE]",
		Short:   "Read one row",
		Example: "  tabula get users alice --columns profile:name --versions 1 --output json",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := readOptions(cmd)
			if err != nil {
				return err
			}
			row := []byte(args[1])
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			r, err := s.cli.Open(args[0]).ReadRow(s.ctx, row, opts...)
			if err != nil {
				return wrapf(err, "reading row %s of %s", display(row), args[0])
			}
			if len(r.Cells) == 0 && !s.out.json {
				fmt.Fprintf(cmd.ErrOrStderr(), "row %s not found\n", display(row))
				return nil
			}
			return s.out.cells(r.Cells)
		},
	}
	addReadFlags(c)
	return c
}

func newScanCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "scan TABLE [--start ROW] [--end ROW] [--prefix P] [--columns ...] [--versions N] [--row-regex RE] [--qualifier-regex RE] [--value-regex RE] [--limit N] [--reverse]",
		Short: "Read a range of rows in key order",
		Long: `Read the rows in [--start, --end) (or those starting with --prefix) in key order,
across every tablet of the table. With --reverse the rows come from the last down
(each row's cells in the usual order), and --limit counts from the last row.`,
		Example: "  tabula scan users --start a --end m --columns profile --versions 1 --limit 10\n" +
			"  tabula scan users --prefix order# --reverse --limit 1   # the highest order# row",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := readOptions(cmd)
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

// scanRowSet builds the row set of scan and count from --start, --end and
// --prefix.
func scanRowSet(cmd *cobra.Command) (client.RowSet, error) {
	start, _ := cmd.Flags().GetString("start")
	end, _ := cmd.Flags().GetString("end")
	prefix, _ := cmd.Flags().GetString("prefix")
	if prefix != "" {
		if start != "" || end != "" {
			return nil, cell.Invalidf("--prefix cannot be combined with --start or --end; use one or the other")
		}
		return client.PrefixRange([]byte(prefix)), nil
	}
	if start != "" && end != "" && start >= end {
		return nil, cell.Invalidf("--start %q is not before --end %q; the range is [start, end)", start, end)
	}
	var s, e []byte
	if start != "" {
		s = []byte(start)
	}
	if end != "" {
		e = []byte(end)
	}
	return client.NewRange(s, e), nil
}

func newDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete TABLE ROW [FAMILY[:QUALIFIER]]",
		Short: "Delete a whole row, a family of a row, or one column of a row",
		Example: `  tabula delete users alice                 # the whole row
  tabula delete users alice profile         # the family profile of the row
  tabula delete users alice profile:name    # one column`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			row := []byte(args[1])
			if err := cell.ValidateRow(row); err != nil {
				return err
			}
			m := client.NewMutation()
			what := "row " + display(row)
			if len(args) == 3 {
				fam, q, hasQ := strings.Cut(args[2], ":")
				if err := cell.ValidateFamilyName(fam); err != nil {
					return cell.Invalidf("%q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY or FAMILY:QUALIFIER", args[2], fam)
				}
				if hasQ {
					m.DeleteColumn(fam, []byte(q))
					what = fmt.Sprintf("column %s:%s of row %s", fam, display([]byte(q)), display(row))
				} else {
					m.DeleteFamily(fam)
					what = fmt.Sprintf("family %s of row %s", fam, display(row))
				}
			} else {
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
}

func newCountCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "count TABLE [--start ROW] [--end ROW] [--prefix P]",
		Short: "Count the rows of a table (or of a range)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := scanRowSet(cmd)
			if err != nil {
				return err
			}
			s, err := connectLong(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			// One cell per row, without its value, is enough to see the row.
			f := rowfilter.Chain(rowfilter.CellsPerRowLimit(1), rowfilter.StripValue())
			it := s.cli.Open(args[0]).ReadRows(s.ctx, rs, client.WithFilter(f), client.ReuseRows())
			defer it.Close()
			var n int64
			for it.Next() {
				n++
			}
			if err := it.Err(); err != nil {
				return wrapf(err, "counting %s", args[0])
			}
			return s.out.message(fmt.Sprint(n), "rows", n)
		},
	}
	c.Flags().String("start", "", "first row (inclusive)")
	c.Flags().String("end", "", "end row (exclusive)")
	c.Flags().String("prefix", "", "only rows starting with this prefix")
	return c
}
