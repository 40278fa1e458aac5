package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

// cellArg is one FAMILY:QUALIFIER=VALUE argument of a write command
// (parseCellArgTyped).
type cellArg struct {
	family           string
	qualifier, value []byte
}

// column is one item of --columns: FAMILY or FAMILY:QUALIFIER.
type column struct {
	family    string
	qualifier []byte
	whole     bool // the whole family
}

// parseColumns parses --columns items. A qualifier is taken as
// parseBytesArg takes a key: as it is, Go-quoted ("\xff") or, with hex,
// in hex.
func parseColumns(items []string, hex bool) ([]column, error) {
	var out []column
	for _, it := range items {
		fam, q, hasQ := strings.Cut(it, ":")
		if err := cell.ValidateFamilyName(fam); err != nil {
			return nil, cell.Invalidf("--columns item %q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY or FAMILY:QUALIFIER", it, fam)
		}
		c := column{family: fam, whole: !hasQ}
		if hasQ && q != "" {
			b, err := parseBytesArg("--columns item "+strconv.Quote(it)+": qualifier", q, hex)
			if err != nil {
				return nil, err
			}
			c.qualifier = b
		}
		out = append(out, c)
	}
	return out, nil
}

// regexes are the --row-regex, --qualifier-regex and --value-regex of
// get/scan, empty when not given. They are taken as the bytes of the
// argument, so a pattern may hold any byte (RE2 on bytes, as Bigtable's).
type regexes struct{ row, qualifier, value string }

// readSpec is what the read flags of get and scan select. filter turns it
// into one chain, in this order (docs/OPERATIONS.md "Data commands"):
// --row-regex, --columns, --qualifier-regex, --time-range, --value-regex,
// --value-range, --filter, --versions, --cells-per-row, --keys-only.
type readSpec struct {
	cols        []column
	re          regexes
	timeRange   *rowfilter.Filter // a TimestampRange, or nil
	valueRange  *rowfilter.Filter // a ValueRange, or nil
	expr        *rowfilter.Filter // --filter, or nil
	versions    int               // 0: every version
	cellsPerRow int               // 0: no limit
	keysOnly    bool              // one cell per row, without its value
}

// filter builds the read's filter; nil when nothing is selected.
func (r readSpec) filter() (*rowfilter.Filter, error) {
	if r.versions < 0 {
		return nil, cell.Invalidf("--versions %d is negative; give N >= 1, or 0 for all versions", r.versions)
	}
	if r.cellsPerRow < 0 {
		return nil, cell.Invalidf("--cells-per-row %d is negative; give N >= 1, or 0 for no limit", r.cellsPerRow)
	}
	var parts []*rowfilter.Filter
	if r.re.row != "" {
		parts = append(parts, rowfilter.RowKeyRegex(r.re.row))
	}
	if len(r.cols) > 0 {
		var branches []*rowfilter.Filter
		for _, c := range r.cols {
			if c.whole {
				branches = append(branches, rowfilter.Family(c.family))
				continue
			}
			branches = append(branches, exactColumn(c.family, c.qualifier))
		}
		if len(branches) == 1 {
			parts = append(parts, branches[0])
		} else {
			parts = append(parts, rowfilter.Interleave(branches...))
		}
	}
	if r.re.qualifier != "" {
		parts = append(parts, rowfilter.QualifierRegex(r.re.qualifier))
	}
	for _, f := range []*rowfilter.Filter{r.timeRange, r.valueRegex(), r.valueRange, r.expr} {
		if f != nil {
			parts = append(parts, f)
		}
	}
	if r.versions > 0 {
		parts = append(parts, rowfilter.CellsPerColumnLimit(r.versions))
	}
	if r.cellsPerRow > 0 {
		parts = append(parts, rowfilter.CellsPerRowLimit(r.cellsPerRow))
	}
	if r.keysOnly {
		// One cell per row, without its value, is enough to see the row.
		parts = append(parts, rowfilter.CellsPerRowLimit(1), rowfilter.StripValue())
	}
	var f *rowfilter.Filter
	switch len(parts) {
	case 0:
		return nil, nil
	case 1:
		f = parts[0]
	default:
		f = rowfilter.Chain(parts...)
	}
	// Checked here, so that a bad pattern fails before connecting, with
	// the whole filter in view (the message's path is within it).
	if _, err := rowfilter.Compile(f); err != nil {
		return nil, fmt.Errorf("the read's filter %s: %w", f, err)
	}
	return f, nil
}

// exactColumn is the filter passing the cells of one column.
func exactColumn(family string, qualifier []byte) *rowfilter.Filter {
	if qualifier == nil {
		qualifier = []byte{} // the empty qualifier: a non-nil end bound
	}
	// Closed at both ends: exactly this qualifier.
	return &rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Family: family, Start: qualifier, End: qualifier}
}

func (r readSpec) valueRegex() *rowfilter.Filter {
	if r.re.value == "" {
		return nil
	}
	return rowfilter.ValueRegex(r.re.value)
}

// parseSize parses a byte count: N, or N with a suffix k, m, g (also KB,
// KiB, MB, MiB, GB, GiB; any case; all powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
		{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1},
	} {
		if rest, ok := strings.CutSuffix(t, suf.s); ok {
			t, mult = strings.TrimSpace(rest), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, cell.Invalidf("size %q is not a byte count; write e.g. 65536, 64KiB, 64MiB or 1GiB", s)
	}
	return n * mult, nil
}
