package main

import (
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

// cellArg is one FAMILY:QUALIFIER=VALUE argument of `tabula put`.
type cellArg struct {
	family           string
	qualifier, value []byte
}

// parseCellArg parses FAMILY:QUALIFIER=VALUE. The family ends at the first
// ':' and the qualifier at the first '=' after it; the qualifier and the
// value may be empty.
func parseCellArg(arg string) (cellArg, error) {
	fam, rest, ok := strings.Cut(arg, ":")
	if !ok {
		return cellArg{}, cell.Invalidf("cell %q has no ':'; write FAMILY:QUALIFIER=VALUE", arg)
	}
	q, val, ok := strings.Cut(rest, "=")
	if !ok {
		return cellArg{}, cell.Invalidf("cell %q has no '='; write FAMILY:QUALIFIER=VALUE", arg)
	}
	if err := cell.ValidateFamilyName(fam); err != nil {
		return cellArg{}, cell.Invalidf("cell %q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY:QUALIFIER=VALUE", arg, fam)
	}
	c := cellArg{family: fam, qualifier: []byte(q), value: []byte(val)}
	if err := cell.ValidateQualifier(c.qualifier); err != nil {
		return cellArg{}, err
	}
	if len(c.value) > cell.MaxValueLen {
		return cellArg{}, cell.Invalidf("cell %s:%s: value of %d bytes is larger than %d", fam, q, len(c.value), cell.MaxValueLen)
	}
	return c, nil
}

// column is one item of --columns: FAMILY or FAMILY:QUALIFIER.
type column struct {
	family    string
	qualifier []byte
	whole     bool // the whole family
}

func parseColumns(items []string) ([]column, error) {
	var out []column
	for _, it := range items {
		fam, q, hasQ := strings.Cut(it, ":")
		if err := cell.ValidateFamilyName(fam); err != nil {
			return nil, cell.Invalidf("--columns item %q: family %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -; write FAMILY or FAMILY:QUALIFIER", it, fam)
		}
		out = append(out, column{family: fam, qualifier: []byte(q), whole: !hasQ})
	}
	return out, nil
}

// regexes are the --row-regex, --qualifier-regex and --value-regex of
// get/scan, empty when not given. They are taken as the bytes of the
// argument, so a pattern may hold any byte (RE2 on bytes, as Bigtable's).
type regexes struct{ row, qualifier, value string }

// readFilter builds the filter of get/scan: the row key regex, the union
// of the columns (every column when none), the qualifier and value
// regexes, then the newest versions of each column (all when versions is
// 0).
func readFilter(cols []column, re regexes, versions int) (*rowfilter.Filter, error) {
	if versions < 0 {
		return nil, cell.Invalidf("--versions %d is negative; give N >= 1, or 0 for all versions", versions)
	}
	var parts []*rowfilter.Filter
	if re.row != "" {
		parts = append(parts, rowfilter.RowKeyRegex(re.row))
	}
	if len(cols) > 0 {
		var branches []*rowfilter.Filter
		for _, c := range cols {
			if c.whole {
				branches = append(branches, rowfilter.Family(c.family))
				continue
			}
			branches = append(branches, &rowfilter.Filter{
				Kind: rowfilter.KindQualifierRange, Family: c.family,
				Start: c.qualifier, End: c.qualifier, // closed at both ends: exactly this qualifier
			})
		}
		if len(branches) == 1 {
			parts = append(parts, branches[0])
		} else {
			parts = append(parts, rowfilter.Interleave(branches...))
		}
	}
	if re.qualifier != "" {
		parts = append(parts, rowfilter.QualifierRegex(re.qualifier))
	}
	if re.value != "" {
		parts = append(parts, rowfilter.ValueRegex(re.value))
	}
	if versions > 0 {
		parts = append(parts, rowfilter.CellsPerColumnLimit(versions))
	}
	switch len(parts) {
	case 0:
		return nil, nil
	case 1:
		return parts[0], nil
	}
	return rowfilter.Chain(parts...), nil
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
