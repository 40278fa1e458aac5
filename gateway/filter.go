package gateway

import (
	"fmt"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/rowfilter"
)

// filter converts a Bigtable RowFilter into Tabula's, one node for one node
// (docs/GATEWAY.md lists each filter and its status). A nil filter passes
// everything. Boolean filters must be true when set, as Bigtable requires.
// Errors are INVALID_ARGUMENT statuses naming the field by its path; the
// tablet servers check the rest (regex syntax, counts) when they compile it.
func filter(f *btpb.RowFilter) (*rowfilter.Filter, error) {
	if f == nil {
		return nil, nil
	}
	out, err := convertFilter(f, "filter", 1)
	if err != nil {
		return nil, err
	}
	if _, err := rowfilter.Compile(out); err != nil {
		return nil, invalidf("%s", trimInvalid(err))
	}
	if err := rowfilter.CheckBigtable(out); err != nil {
		return nil, invalidf("%s", trimInvalid(err))
	}
	return out, nil
}

func convertFilter(f *btpb.RowFilter, path string, depth int) (*rowfilter.Filter, error) {
	if depth > rowfilter.BigtableMaxDepth {
		return nil, invalidf("%s: filters nest more than %d deep, Bigtable's limit", path, rowfilter.BigtableMaxDepth)
	}
	children := func(fs []*btpb.RowFilter, kind string) ([]*rowfilter.Filter, error) {
		out := make([]*rowfilter.Filter, len(fs))
		for i, c := range fs {
			var err error
			if out[i], err = convertFilter(c, fmt.Sprintf("%s.%s.filters[%d]", path, kind, i), depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	mustBeTrue := func(set bool, name string) error {
		if !set {
			return invalidf("%s.%s must be true if set", path, name)
		}
		return nil
	}
	switch x := f.GetFilter().(type) {
	case nil:
		return nil, invalidf("%s: a RowFilter must set one filter", path)
	case *btpb.RowFilter_Chain_:
		fs, err := children(x.Chain.GetFilters(), "chain")
		return rowfilter.Chain(fs...), err
	case *btpb.RowFilter_Interleave_:
		fs, err := children(x.Interleave.GetFilters(), "interleave")
		return rowfilter.Interleave(fs...), err
	case *btpb.RowFilter_Condition_:
		c := x.Condition
		pred, err := convertOptional(c.GetPredicateFilter(), path+".condition.predicate_filter", depth)
		if err != nil {
			return nil, err
		}
		if pred == nil {
			// Bigtable: an unset predicate matches every row with a cell.
			pred = rowfilter.Pass()
		}
		t, err := convertOptional(c.GetTrueFilter(), path+".condition.true_filter", depth)
		if err != nil {
			return nil, err
		}
		fl, err := convertOptional(c.GetFalseFilter(), path+".condition.false_filter", depth)
		if err != nil {
			return nil, err
		}
		return rowfilter.Condition(pred, t, fl), nil
	case *btpb.RowFilter_PassAllFilter:
		return rowfilter.Pass(), mustBeTrue(x.PassAllFilter, "pass_all_filter")
	case *btpb.RowFilter_BlockAllFilter:
		return rowfilter.Block(), mustBeTrue(x.BlockAllFilter, "block_all_filter")
	case *btpb.RowFilter_StripValueTransformer:
		return rowfilter.StripValue(), mustBeTrue(x.StripValueTransformer, "strip_value_transformer")
	case *btpb.RowFilter_RowKeyRegexFilter:
		if len(x.RowKeyRegexFilter) == 0 {
			return nil, invalidf("%s.row_key_regex_filter must not be empty", path)
		}
		return rowfilter.RowKeyRegex(string(x.RowKeyRegexFilter)), nil
	case *btpb.RowFilter_FamilyNameRegexFilter:
		return rowfilter.FamilyRegex(x.FamilyNameRegexFilter), nil
	case *btpb.RowFilter_ColumnQualifierRegexFilter:
		return rowfilter.QualifierRegex(string(x.ColumnQualifierRegexFilter)), nil
	case *btpb.RowFilter_ValueRegexFilter:
		return rowfilter.ValueRegex(string(x.ValueRegexFilter)), nil
	case *btpb.RowFilter_ColumnRangeFilter:
		return columnRange(x.ColumnRangeFilter, path)
	case *btpb.RowFilter_TimestampRangeFilter:
		r := x.TimestampRangeFilter
		return rowfilter.TimestampRange(r.GetStartTimestampMicros(), r.GetEndTimestampMicros()), nil
	case *btpb.RowFilter_ValueRangeFilter:
		return valueRange(x.ValueRangeFilter), nil
	case *btpb.RowFilter_CellsPerRowLimitFilter:
		if x.CellsPerRowLimitFilter <= 0 {
			return nil, invalidf("%s.cells_per_row_limit_filter must be > 0, got %d", path, x.CellsPerRowLimitFilter)
		}
		return rowfilter.CellsPerRowLimit(int(x.CellsPerRowLimitFilter)), nil
	case *btpb.RowFilter_CellsPerRowOffsetFilter:
		if x.CellsPerRowOffsetFilter < 0 {
			return nil, invalidf("%s.cells_per_row_offset_filter must be >= 0, got %d", path, x.CellsPerRowOffsetFilter)
		}
		return rowfilter.CellsPerRowOffset(int(x.CellsPerRowOffsetFilter)), nil
	case *btpb.RowFilter_CellsPerColumnLimitFilter:
		if x.CellsPerColumnLimitFilter <= 0 {
			return nil, invalidf("%s.cells_per_column_limit_filter must be > 0, got %d", path, x.CellsPerColumnLimitFilter)
		}
		return rowfilter.CellsPerColumnLimit(int(x.CellsPerColumnLimitFilter)), nil
	}
	return extendedFilter(f, path)
}

func convertOptional(f *btpb.RowFilter, path string, depth int) (*rowfilter.Filter, error) {
	if f == nil {
		return nil, nil
	}
	return convertFilter(f, path, depth+1)
}

// columnRange converts a ColumnRange. Bigtable requires its family; an
// unset start is the empty qualifier (closed), an unset end no bound.
func columnRange(r *btpb.ColumnRange, path string) (*rowfilter.Filter, error) {
	if r.GetFamilyName() == "" {
		return nil, invalidf("%s.column_range_filter.family_name must be set", path)
	}
	f := &rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Family: r.GetFamilyName(), Start: []byte{}}
	switch s := r.GetStartQualifier().(type) {
	case *btpb.ColumnRange_StartQualifierClosed:
		f.Start = s.StartQualifierClosed
	case *btpb.ColumnRange_StartQualifierOpen:
		f.Start, f.StartOpen = s.StartQualifierOpen, true
	}
	switch e := r.GetEndQualifier().(type) {
	case *btpb.ColumnRange_EndQualifierClosed:
		f.End = nonNil(e.EndQualifierClosed)
	case *btpb.ColumnRange_EndQualifierOpen:
		f.End, f.EndOpen = nonNil(e.EndQualifierOpen), true
	}
	return f, nil
}

// valueRange converts a ValueRange: an unset start is the empty value
// (closed), an unset end no bound.
func valueRange(r *btpb.ValueRange) *rowfilter.Filter {
	f := &rowfilter.Filter{Kind: rowfilter.KindValueRange, Start: []byte{}}
	switch s := r.GetStartValue().(type) {
	case *btpb.ValueRange_StartValueClosed:
		f.Start = s.StartValueClosed
	case *btpb.ValueRange_StartValueOpen:
		f.Start, f.StartOpen = s.StartValueOpen, true
	}
	switch e := r.GetEndValue().(type) {
	case *btpb.ValueRange_EndValueClosed:
		f.End = nonNil(e.EndValueClosed)
	case *btpb.ValueRange_EndValueOpen:
		f.End, f.EndOpen = nonNil(e.EndValueOpen), true
	}
	return f
}

// nonNil keeps a set-but-empty bound distinct from an unset one: in
// rowfilter a nil End means no bound, an empty one the empty string.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
