package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

// The read flags of get and scan: what to select (readSpec, turned into
// one filter) and how to print it (cellView). The filter language itself
// lives in package rowfilter; this file only reads flags.

func addReadFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringSlice("columns", nil, "only these columns: FAMILY or FAMILY:QUALIFIER, comma-separated (a family the table lacks is an error)")
	fl.Int("versions", 0, "only the newest N versions of each column (0: all)")
	fl.String("row-regex", "", "only rows whose whole key matches this RE2 pattern (on bytes: any byte may appear)")
	fl.String("qualifier-regex", "", "only cells whose whole qualifier matches this RE2 pattern")
	fl.String("value-regex", "", "only cells whose whole value matches this RE2 pattern (before --versions counts)")
	fl.String("time-range", "", "only cells with a timestamp in [FROM,TO): each microseconds since the Unix epoch or RFC 3339 (2026-12-06T19:00:00Z); leave one out for no bound (FROM, or ,TO)")
	fl.String("value-range", "", `only cells whose value is in [FROM,TO), compared as bytes; leave one out for no bound; quote a bound holding ',' or bytes as the output prints them ("a,b" or "\xff")`)
	fl.String("filter", "", `a filter in the language of docs/FILTERS.md, e.g. 'chain(family("cf"), value_regex("a.*"))'; chained after the flags above and before --versions, --cells-per-row and --keys-only`)
	fl.Int("cells-per-row", 0, "at most N cells of each row, counted after --versions (0: no limit)")
	fl.Bool("keys-only", false, "print only the keys of the rows that match, one per line")
	fl.Bool("hex", false, "keys, --columns qualifiers and --value-range bounds are typed in hex (ff01), and rows, qualifiers and values are printed in hex")
	fl.String("time-format", "micros", "how timestamps are printed: micros (since the Unix epoch) or rfc3339 (UTC)")
}

// readSpecFromFlags reads the selection flags of get and scan.
func readSpecFromFlags(cmd *cobra.Command) (readSpec, error) {
	fl := cmd.Flags()
	hexKeys, _ := fl.GetBool("hex")
	items, _ := fl.GetStringSlice("columns")
	var r readSpec
	var err error
	if r.cols, err = parseColumns(items, hexKeys); err != nil {
		return r, err
	}
	r.versions, _ = fl.GetInt("versions")
	r.cellsPerRow, _ = fl.GetInt("cells-per-row")
	r.keysOnly, _ = fl.GetBool("keys-only")
	r.re.row, _ = fl.GetString("row-regex")
	r.re.qualifier, _ = fl.GetString("qualifier-regex")
	r.re.value, _ = fl.GetString("value-regex")
	if s, _ := fl.GetString("time-range"); s != "" {
		if r.timeRange, err = parseTimeRange(s); err != nil {
			return r, err
		}
	}
	if s, _ := fl.GetString("value-range"); s != "" {
		if r.valueRange, err = parseValueRange(s, hexKeys); err != nil {
			return r, err
		}
	}
	if s, _ := fl.GetString("filter"); s != "" {
		if r.expr, err = parseFilterFlag("--filter", s); err != nil {
			return r, err
		}
	}
	return r, nil
}

// readFlags reads every read flag of get and scan: what to select, the
// read options that select it, and how to print it.
func readFlags(cmd *cobra.Command) (readSpec, []client.ReadOption, cellView, error) {
	spec, err := readSpecFromFlags(cmd)
	if err != nil {
		return spec, nil, cellView{}, err
	}
	f, err := spec.filter()
	if err != nil {
		return spec, nil, cellView{}, err
	}
	var opts []client.ReadOption
	if f != nil {
		opts = append(opts, client.WithFilter(f))
	}
	view, err := readView(cmd)
	return spec, opts, view, err
}

// parseFilterFlag parses a filter flag (--filter, checkandput's
// --if-filter); a syntax error shows the expression with a caret under the
// position.
func parseFilterFlag(flag, s string) (*rowfilter.Filter, error) {
	f, err := rowfilter.Parse(s)
	if err != nil {
		var caret string
		if pe, ok := err.(*rowfilter.ParseError); ok && !strings.ContainsAny(s, "\n\r\t") {
			caret = fmt.Sprintf("\n  %s\n  %s^", s, strings.Repeat(" ", pe.Pos-1))
		}
		return nil, cell.Invalidf("%s: %v (the language is in docs/FILTERS.md)%s", flag, err, caret)
	}
	if _, err := rowfilter.Compile(f); err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, s, err)
	}
	return f, nil
}

// parseBytesArg reads a key, qualifier or value bound typed on the
// command line: in hex with --hex; else Go-quoted when it starts and ends
// with '"', as the text output prints binary bytes ("\xff\x01" is the
// bytes FF 01; in the shell, in single quotes); else its bytes as they
// are.
func parseBytesArg(what, s string, hexKeys bool) ([]byte, error) {
	if hexKeys {
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, cell.Invalidf("%s %q is not hex (two hex digits a byte, as in ff01; --hex is on)", what, s)
		}
		return b, nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		b, err := rowfilter.Unquote(s)
		if err != nil {
			return nil, cell.Invalidf(`%s %s is not a quoted string: %v; write it as the output prints it, e.g. '"\xff\x01"' in the shell, or use --hex`, what, s, err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// splitPair splits FROM,TO at its one comma outside double quotes.
func splitPair(flag, s string) (from, to string, err error) {
	cut := -1
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++ // the escaped byte
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			if cut >= 0 {
				return "", "", cell.Invalidf(`%s %q has more than one ','; give FROM,TO, and quote a bound that holds a comma ("a,b")`, flag, s)
			}
			cut = i
		}
	}
	if cut < 0 {
		return "", "", cell.Invalidf("%s %q has no ','; give FROM,TO (either may be left out: FROM, or ,TO)", flag, s)
	}
	from, to = s[:cut], s[cut+1:]
	if from == "" && to == "" {
		return "", "", cell.Invalidf("%s %q bounds nothing; give FROM, TO or both", flag, s)
	}
	return from, to, nil
}

// parseTimeRange parses --time-range FROM,TO into [FROM, TO).
func parseTimeRange(s string) (*rowfilter.Filter, error) {
	a, b, err := splitPair("--time-range", s)
	if err != nil {
		return nil, err
	}
	var from, to int64
	if a != "" {
		if from, err = rowfilter.ParseTime(a); err != nil {
			return nil, cell.Invalidf("--time-range %q: FROM %v", s, err)
		}
	}
	if b != "" {
		if to, err = rowfilter.ParseTime(b); err != nil {
			return nil, cell.Invalidf("--time-range %q: TO %v", s, err)
		}
		if to <= from {
			return nil, cell.Invalidf("--time-range %q is empty: TO must be after FROM (the range is [FROM, TO))", s)
		}
	}
	return rowfilter.TimestampRange(from, to), nil
}

// parseValueRange parses --value-range FROM,TO into [FROM, TO).
func parseValueRange(s string, hexKeys bool) (*rowfilter.Filter, error) {
	a, b, err := splitPair("--value-range", s)
	if err != nil {
		return nil, err
	}
	var from, to []byte
	if a != "" {
		if from, err = parseBytesArg("--value-range FROM", a, hexKeys); err != nil {
			return nil, err
		}
	}
	if b != "" {
		if to, err = parseBytesArg("--value-range TO", b, hexKeys); err != nil {
			return nil, err
		}
		if string(to) <= string(from) {
			return nil, cell.Invalidf("--value-range %q is empty: TO must sort after FROM (the range is [FROM, TO), compared as bytes)", s)
		}
	}
	return rowfilter.ValueRange(from, to), nil
}

// readView reads how get and scan print cells.
func readView(cmd *cobra.Command) (cellView, error) {
	var v cellView
	v.hex, _ = cmd.Flags().GetBool("hex")
	v.keysOnly, _ = cmd.Flags().GetBool("keys-only")
	switch tf, _ := cmd.Flags().GetString("time-format"); tf {
	case "", "micros":
	case "rfc3339":
		v.rfc3339 = true
	default:
		return v, cell.Invalidf("--time-format %q is not micros or rfc3339", tf)
	}
	return v, nil
}

// describeForRead reads the table's schema once for get and scan (one
// admin call): a family named in --columns that the table lacks is an
// error naming the families it has (a filter on a missing family reads
// nothing, which looks like missing data), and the
// families of an int64 aggregate type (sum, min, max) are printed as
// numbers (unless --hex). A table the caller may not describe is read as
// before: the read itself says what is wrong.
func describeForRead(ctx context.Context, cli *client.Client, table string, cols []column, view *cellView) error {
	ti, err := cli.Admin().DescribeTable(ctx, table)
	if err != nil {
		return nil
	}
	var names []string
	for _, f := range ti.Families {
		names = append(names, f.Name)
		if f.ValueType != families.Bytes && !view.hex {
			if view.numeric == nil {
				view.numeric = map[string]bool{}
			}
			view.numeric[f.Name] = true
		}
	}
	for _, c := range cols {
		if !slices.Contains(names, c.family) {
			return cell.Invalidf("--columns: table %s has no family %s; its families are %s (or add it: tabula family add %s %s)",
				table, strconv.Quote(c.family), strings.Join(names, ", "), table, c.family)
		}
	}
	return nil
}
