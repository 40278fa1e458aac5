package main

import (
	binenc "encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// The conditional and read-modify-write commands (incr, append,
// checkandput) and the column-and-time parsing that delete shares with
// them. Keys, qualifiers and values are typed as get and scan print them
// (parseBytesArg: as they are, Go-quoted "\xff", or hex with --hex).

// writeKeyHelp is the part of the write commands' help about typing bytes.
const writeKeyHelp = `ROW, QUALIFIER and VALUE (where the command takes them) are typed as get
and scan print them: as they are, or Go-quoted when they start and end with
'"' ('"\xff\x01"' in the shell is the bytes FF 01); with --hex each is hex
(ff01).`

// parseColumnArg parses FAMILY:QUALIFIER (the qualifier typed as a key
// is, possibly empty).
func parseColumnArg(what, arg string, hexKeys bool) (string, []byte, error) {
	fam, q, ok := strings.Cut(arg, ":")
	if !ok {
		return "", nil, cell.Invalidf("%s %q has no ':'; write FAMILY:QUALIFIER", what, arg)
	}
	if err := cell.ValidateFamilyName(fam); err != nil {
		return "", nil, cell.Invalidf("%s %q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY:QUALIFIER", what, arg, fam)
	}
	qual, err := parseBytesArg(what+" "+strconv.Quote(arg)+": qualifier", q, hexKeys)
	if err != nil {
		return "", nil, err
	}
	if err := cell.ValidateQualifier(qual); err != nil {
		return "", nil, err
	}
	return fam, qual, nil
}

// parseCellArgTyped parses FAMILY:QUALIFIER=VALUE with the qualifier and
// the value typed as keys are. The qualifier ends at the first '=' (in
// hex or outside quotes).
func parseCellArgTyped(what, arg string, hexKeys bool) (cellArg, error) {
	col, val, ok := cutValue(arg)
	if !ok {
		if _, q, _ := strings.Cut(arg, ":"); strings.HasPrefix(q, `"`) && strings.Contains(q, "=") {
			return cellArg{}, cell.Invalidf(`%s %q has no '=' after its quoted qualifier; close the qualifier's quotes: FAMILY:"QUALIFIER"=VALUE`, what, arg)
		}
		return cellArg{}, cell.Invalidf("%s %q has no '='; write FAMILY:QUALIFIER=VALUE", what, arg)
	}
	fam, q, err := parseColumnArg(what, col, hexKeys)
	if err != nil {
		return cellArg{}, err
	}
	v, err := parseBytesArg(what+" "+strconv.Quote(arg)+": value", val, hexKeys)
	if err != nil {
		return cellArg{}, err
	}
	if len(v) > cell.MaxValueLen {
		return cellArg{}, cell.Invalidf("%s %s:%s: value of %d bytes is larger than %d", what, fam, display(q), len(v), cell.MaxValueLen)
	}
	return cellArg{family: fam, qualifier: q, value: v}, nil
}

// cutValue splits FAMILY:QUALIFIER=VALUE at the first '=' that is not
// inside a quoted qualifier ("a=b" may be a qualifier).
func cutValue(arg string) (col, val string, ok bool) {
	colon := strings.IndexByte(arg, ':')
	if colon < 0 {
		return "", "", false
	}
	quoted := false
	for i := colon + 1; i < len(arg); i++ {
		switch c := arg[i]; {
		case quoted && c == '\\':
			i++
		case c == '"' && (i == colon+1 || quoted):
			quoted = !quoted
		case c == '=' && !quoted:
			return arg[:i], arg[i+1:], true
		}
	}
	return "", "", false
}

// rowArg parses and checks the ROW argument of a write.
func rowArg(arg string, hexKeys bool) ([]byte, error) {
	row, err := parseBytesArg("ROW", arg, hexKeys)
	if err != nil {
		return nil, err
	}
	if err := cell.ValidateRow(row); err != nil {
		return nil, err
	}
	return row, nil
}

func newIncrCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "incr TABLE ROW FAMILY:QUALIFIER [N]",
		Short: "Add N (default 1) to a counter cell of a bytes family, atomically, and print the new value",
		Long: `Add N (an int64, default 1, may be negative) to the newest value of
FAMILY:QUALIFIER read as an 8-byte big-endian int64 (an absent cell counts as
0), write the sum as a new version stamped with the server's clock, and print
it as a number (HBase shell's incr, Bigtable's ReadModifyWrite increment).
The sum wraps around past the int64 range, as HBase's does. A cell holding
anything but 8 bytes (text written by put, say) is refused, and the message
says how to fix it. For aggregate families (type=sum, min, max) use
` + "`tabula add`" + `. An incr whose outcome is unknown (a lost connection) is not
retried: it would count twice.

` + writeKeyHelp,
		Example: "  tabula incr stats page1 hits:views\n  tabula incr stats page1 hits:views 10\n  tabula incr stats page1 hits:views -- -1",
		Args:    cobra.RangeArgs(3, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			hexKeys, _ := cmd.Flags().GetBool("hex")
			row, err := rowArg(args[1], hexKeys)
			if err != nil {
				return err
			}
			fam, q, err := parseColumnArg("column", args[2], hexKeys)
			if err != nil {
				return err
			}
			n := int64(1)
			if len(args) == 4 {
				if n, err = strconv.ParseInt(args[3], 10, 64); err != nil {
					return cell.Invalidf("N %q is not an int64; give a whole number such as 1, 10 or -1 (after --, for a negative one: incr T R F:Q -- -1)", args[3])
				}
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			r, err := s.cli.Open(args[0]).ReadModifyWrite(s.ctx, row, client.NewReadModifyWrite().Increment(fam, q, n))
			if err != nil {
				return incrError(err, args[0], row, fam, q)
			}
			if len(r.Cells) != 1 || len(r.Cells[0].Value) != 8 {
				return fmt.Errorf("incrementing %s:%s of row %s: the server answered %d cell(s), not the one 8-byte counter", fam, display(q), display(row), len(r.Cells))
			}
			v := int64(binenc.BigEndian.Uint64(r.Cells[0].Value))
			return s.out.message(strconv.FormatInt(v, 10), "value", v)
		},
	}
	c.Flags().Bool("hex", false, "ROW and QUALIFIER are typed in hex (ff01)")
	return c
}

// incrError names the problem and the fix when the server refuses an
// increment: a cell that is not an 8-byte counter, or an aggregate family.
func incrError(err error, table string, row []byte, fam string, q []byte) error {
	what := fmt.Sprintf("incrementing %s:%s of row %s of %s", fam, display(q), display(row), table)
	st, ok := status.FromError(unwrapStatus(err))
	if !ok || st.Code() != codes.InvalidArgument {
		return wrapf(err, "%s", what)
	}
	msg := st.Message()
	switch {
	case strings.Contains(msg, "not an 8-byte big-endian int64"): // tablet.ReadModifyWrite
		return cell.Invalidf("%s: the cell's newest value is not a counter (%s); incr needs an 8-byte big-endian int64, which text written by put (\"5\") is not. "+
			"Start the counter over: tabula delete %s %s %s:%s, then tabula incr %s %s %s:%s N",
			what, strings.TrimPrefix(msg, "cell: invalid argument: "), table, display(row), fam, display(q), table, display(row), fam, display(q))
	case strings.Contains(msg, "is an aggregate"):
		return cell.Invalidf("%s: %s; add to it with tabula add %s %s %s:%s=N", what, strings.TrimPrefix(msg, "cell: invalid argument: "), table, display(row), fam, display(q))
	}
	return wrapf(err, "%s", what)
}

func newAppendCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "append TABLE ROW FAMILY:QUALIFIER=VALUE...",
		Short: "Append bytes to cells of one row, atomically, and print the new values",
		Long: `Append each VALUE to the newest value of its FAMILY:QUALIFIER (an absent cell
counts as empty) and write the result as a new version stamped with the
server's clock; all of the row's appends are applied atomically (HBase shell's
append, Bigtable's ReadModifyWrite append). Prints the new cells as get does.
An append whose outcome is unknown (a lost connection) is not retried.

` + writeKeyHelp,
		Example: "  tabula append users alice log:trail=,login\n  tabula append users alice 'log:raw=\"\\x00\\x01\"'",
		Args:    cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			hexKeys, _ := cmd.Flags().GetBool("hex")
			row, err := rowArg(args[1], hexKeys)
			if err != nil {
				return err
			}
			rmw := client.NewReadModifyWrite()
			for _, a := range args[2:] {
				ca, err := parseCellArgTyped("cell", a, hexKeys)
				if err != nil {
					return err
				}
				rmw.Append(ca.family, ca.qualifier, ca.value)
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			s.out.cellView = cellView{hex: hexKeys}
			r, err := s.cli.Open(args[0]).ReadModifyWrite(s.ctx, row, rmw)
			if err != nil {
				return wrapf(err, "appending to row %s of %s", display(row), args[0])
			}
			return s.out.cells(r.Cells)
		},
	}
	c.Flags().Bool("hex", false, "ROW, QUALIFIER and VALUE are typed in hex (ff01), and printed in hex")
	return c
}

func newCheckAndPutCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "checkandput TABLE ROW (--if-value FAMILY:QUALIFIER=V | --if-absent FAMILY:QUALIFIER | --if-filter EXPR) FAMILY:QUALIFIER=VALUE... [--else FAMILY:QUALIFIER=VALUE]...",
		Short: "Write cells to a row only if a condition on the row holds (else, optionally, other cells), atomically",
		Long: `Check one condition on ROW and, in the same atomic step, write the
FAMILY:QUALIFIER=VALUE cells if it holds, or the --else cells (if any) if it
does not: HBase's checkAndPut / checkAndMutate, Bigtable's CheckAndMutateRow.
Exactly one condition:
  --if-value F:Q=V   the newest version of column F:Q equals V (byte for byte)
  --if-absent F:Q    column F:Q has no cell (HBase's checkAndPut with a null value)
  --if-filter EXPR   the filter (docs/FILTERS.md) lets any cell of the row through
Prints "matched: true" when the condition held (the cells were written) and
"matched: false" when it did not (the --else cells, if any, were written);
with --output json {"matched":true}. Either outcome exits 0: the exit status
is non-zero only for errors (1: the write failed or an argument is bad, 2: the
command line does not parse). A checkandput whose outcome is unknown (a lost
connection) is not retried. The cells get --timestamp, or the server's clock.

` + writeKeyHelp + `
V and the --else cells are typed the same way.`,
		Example: "  tabula checkandput users alice --if-absent profile:email profile:email=a@example.com\n" +
			"  tabula checkandput users alice --if-value state:s=pending state:s=done --else log:conflict=1\n" +
			"  tabula checkandput users alice --if-filter 'chain(family(\"state\"), value_regex(\"p.*\"))' state:s=done",
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			hexKeys, _ := fl.GetBool("hex")
			ts, _ := fl.GetInt64("timestamp")
			if ts < cell.ServerTimestamp {
				return cell.Invalidf("--timestamp %d is negative; give microseconds since the Unix epoch, or -1 for the server's clock", ts)
			}
			row, err := rowArg(args[1], hexKeys)
			if err != nil {
				return err
			}
			pred, absent, err := checkPredicate(cmd, hexKeys)
			if err != nil {
				return err
			}
			then, err := cellsMutation("cell", args[2:], ts, hexKeys)
			if err != nil {
				return err
			}
			elseArgs, _ := fl.GetStringArray("else")
			var otherwise *client.Mutation
			if len(elseArgs) > 0 {
				if otherwise, err = cellsMutation("--else", elseArgs, ts, hexKeys); err != nil {
					return err
				}
			}
			// --if-absent's predicate finds the column: its cells go on
			// the server's false branch.
			onTrue, onFalse := then, otherwise
			if absent {
				onTrue, onFalse = otherwise, then
			}
			s, err := connect(cmd)
			if err != nil {
				return err
			}
			defer s.close()
			found, err := s.cli.Open(args[0]).CheckAndMutate(s.ctx, row, pred, onTrue, onFalse)
			if err != nil {
				return wrapf(err, "check-and-put on row %s of %s", display(row), args[0])
			}
			matched := found != absent
			return s.out.message(fmt.Sprintf("matched: %t", matched), "matched", matched)
		},
	}
	fl := c.Flags()
	fl.String("if-value", "", "condition: the newest version of FAMILY:QUALIFIER equals V (FAMILY:QUALIFIER=V)")
	fl.String("if-absent", "", "condition: column FAMILY:QUALIFIER has no cell")
	fl.String("if-filter", "", "condition: this filter (docs/FILTERS.md) lets a cell of the row through")
	fl.StringArray("else", nil, "a cell FAMILY:QUALIFIER=VALUE written when the condition does not hold; repeat for more")
	fl.Int64("timestamp", cell.ServerTimestamp, "timestamp of the cells written, in microseconds since the Unix epoch (default: the server's clock)")
	fl.Bool("hex", false, "ROW, QUALIFIERs and VALUEs (V included) are typed in hex (ff01)")
	return c
}

// checkPredicate builds checkandput's predicate from its one condition
// flag; absent reports --if-absent, whose predicate finds the column.
func checkPredicate(cmd *cobra.Command, hexKeys bool) (pred *rowfilter.Filter, absent bool, err error) {
	fl := cmd.Flags()
	ifValue, _ := fl.GetString("if-value")
	ifAbsent, _ := fl.GetString("if-absent")
	ifFilter, _ := fl.GetString("if-filter")
	n := 0
	for _, name := range []string{"if-value", "if-absent", "if-filter"} {
		if fl.Changed(name) {
			n++
		}
	}
	if n != 1 {
		return nil, false, cell.Invalidf("give exactly one condition: --if-value FAMILY:QUALIFIER=V, --if-absent FAMILY:QUALIFIER or --if-filter EXPR (%d given)", n)
	}
	switch {
	case fl.Changed("if-value"):
		ca, err := parseCellArgTyped("--if-value", ifValue, hexKeys)
		if err != nil {
			return nil, false, err
		}
		v := ca.value
		if v == nil {
			v = []byte{}
		}
		// The newest version only, as HBase's checkAndPut compares it.
		return rowfilter.Chain(exactColumn(ca.family, ca.qualifier), rowfilter.CellsPerColumnLimit(1),
			&rowfilter.Filter{Kind: rowfilter.KindValueRange, Start: v, End: v}), false, nil
	case fl.Changed("if-absent"):
		fam, q, err := parseColumnArg("--if-absent", ifAbsent, hexKeys)
		if err != nil {
			return nil, false, err
		}
		return rowfilter.Chain(exactColumn(fam, q), rowfilter.CellsPerColumnLimit(1)), true, nil
	default:
		f, err := parseFilterFlag("--if-filter", ifFilter)
		return f, false, err
	}
}

// cellsMutation turns FAMILY:QUALIFIER=VALUE arguments into one mutation.
func cellsMutation(what string, args []string, ts int64, hexKeys bool) (*client.Mutation, error) {
	m := client.NewMutation()
	for _, a := range args {
		ca, err := parseCellArgTyped(what, a, hexKeys)
		if err != nil {
			return nil, err
		}
		m.Set(ca.family, ca.qualifier, ts, ca.value)
	}
	return m, nil
}
