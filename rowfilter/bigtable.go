package rowfilter

import (
	"fmt"

	"github.com/tabuladb/tabula/cell"
)

// BigtableMaxDepth is how deeply Cloud Bigtable lets filters nest.
const BigtableMaxDepth = 20

// CheckBigtable reports what Cloud Bigtable would reject in f, which
// Compile accepts as Tabula's own extensions, so that a gateway serving
// google.bigtable.v2 answers as Bigtable does. Call it after Compile (it
// does not repeat Compile's checks). The error wraps cell.ErrInvalid.
//
//   - Nesting deeper than 20 (Bigtable's documented limit; Tabula's is
//     MaxDepth).
//   - A QualifierRange without a family: Bigtable's column_range_filter
//     names one family (its emulator matches nothing when it is empty);
//     Tabula reads an empty Family as any family.
//   - RowKeyPrefix and Family, which have no Bigtable counterpart (a
//     gateway never builds them).
//
// It deliberately lets a chain or interleave of fewer than two filters
// through: the Go client sends ChainFilters(f) as a one-filter chain, Tabula
// runs an empty chain as pass and an empty interleave as block, while
// Bigtable's emulator rejects both ("Chain must contain at least two
// RowFilters"). Accepting them loses nothing and breaks no client.
func CheckBigtable(f *Filter) error { return checkBigtable(f, "filter", 1) }

func checkBigtable(f *Filter, path string, depth int) error {
	if f == nil {
		return nil
	}
	invalid := func(format string, args ...any) error {
		return cell.Invalidf("%s (%s): %s", path, f.Kind, fmt.Sprintf(format, args...))
	}
	if depth > BigtableMaxDepth {
		return invalid("filters nest more than %d deep, Bigtable's limit", BigtableMaxDepth)
	}
	switch f.Kind {
	case KindQualifierRange:
		if f.Family == "" {
			return invalid("column_range_filter needs a family_name in Bigtable")
		}
	case KindRowKeyPrefix, KindFamily:
		return invalid("Bigtable has no %s filter", f.Kind)
	}
	for i, c := range f.Filters {
		if err := checkBigtable(c, fmt.Sprintf("%s.filters[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		name string
		f    *Filter
	}{{"predicate", f.Predicate}, {"true", f.True}, {"false", f.False}} {
		if err := checkBigtable(b.f, path+"."+b.name, depth+1); err != nil {
			return err
		}
	}
	return nil
}
