package convert

import (
	"strconv"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/rowfilter"
)

// FilterFromProto converts a RowFilter tree. A nil filter is nil (pass
// everything). A node with no filter set, a boolean filter set to false, a
// nil child, a negative count or nesting deeper than rowfilter.MaxDepth is
// an error wrapping cell.ErrInvalid that names the node's path (for
// example "filter.chain[2].condition.predicate"). Semantic checks (regex
// syntax, N >= 1 for limits) are left to rowfilter.Compile.
//
// Empty end_qualifier and end_value mean "no upper bound", as the proto
// says; empty start fields mean the empty string.
func FilterFromProto(p *tabulapb.RowFilter) (*rowfilter.Filter, error) {
	if p == nil {
		return nil, nil
	}
	return filterFromProto(p, "filter", 1)
}

func filterFromProto(p *tabulapb.RowFilter, path string, depth int) (*rowfilter.Filter, error) {
	if p == nil {
		return nil, cell.Invalidf("%s is missing", path)
	}
	if depth > rowfilter.MaxDepth {
		return nil, cell.Invalidf("%s nests filters more than %d deep", path, rowfilter.MaxDepth)
	}
	switch x := p.GetFilter().(type) {
	case *tabulapb.RowFilter_Chain_:
		fs, err := filtersFromProto(x.Chain.GetFilters(), path+".chain", depth)
		if err != nil {
			return nil, err
		}
		return rowfilter.Chain(fs...), nil
	case *tabulapb.RowFilter_Interleave_:
		fs, err := filtersFromProto(x.Interleave.GetFilters(), path+".interleave", depth)
		if err != nil {
			return nil, err
		}
		return rowfilter.Interleave(fs...), nil
	case *tabulapb.RowFilter_Condition_:
		c := x.Condition
		pred, err := filterFromProto(c.GetPredicateFilter(), path+".condition.predicate_filter", depth+1)
		if err != nil {
			return nil, err
		}
		var t, f *rowfilter.Filter
		if c.GetTrueFilter() != nil {
			if t, err = filterFromProto(c.GetTrueFilter(), path+".condition.true_filter", depth+1); err != nil {
				return nil, err
			}
		}
		if c.GetFalseFilter() != nil {
			if f, err = filterFromProto(c.GetFalseFilter(), path+".condition.false_filter", depth+1); err != nil {
				return nil, err
			}
		}
		return rowfilter.Condition(pred, t, f), nil
	case *tabulapb.RowFilter_PassAllFilter:
		if !x.PassAllFilter {
			return nil, cell.Invalidf("%s.pass_all_filter is false; it must be true when set", path)
		}
		return rowfilter.Pass(), nil
	case *tabulapb.RowFilter_BlockAllFilter:
		if !x.BlockAllFilter {
			return nil, cell.Invalidf("%s.block_all_filter is false; it must be true when set", path)
		}
		return rowfilter.Block(), nil
	case *tabulapb.RowFilter_StripValueTransformer:
		if !x.StripValueTransformer {
			return nil, cell.Invalidf("%s.strip_value_transformer is false; it must be true when set", path)
		}
		return rowfilter.StripValue(), nil
	case *tabulapb.RowFilter_Sink:
		if !x.Sink {
			return nil, cell.Invalidf("%s.sink is false; it must be true when set", path)
		}
		return rowfilter.Sink(), nil
	case *tabulapb.RowFilter_ApplyLabelTransformer:
		return rowfilter.Label(x.ApplyLabelTransformer), nil
	case *tabulapb.RowFilter_RowSampleFilter:
		return rowfilter.RowSample(x.RowSampleFilter), nil
	case *tabulapb.RowFilter_RowKeyRegexFilter:
		return rowfilter.RowKeyRegex(string(x.RowKeyRegexFilter)), nil
	case *tabulapb.RowFilter_RowKeyPrefixFilter:
		return rowfilter.RowKeyPrefix(x.RowKeyPrefixFilter), nil
	case *tabulapb.RowFilter_FamilyNameRegexFilter:
		return rowfilter.FamilyRegex(x.FamilyNameRegexFilter), nil
	case *tabulapb.RowFilter_FamilyNameFilter:
		return rowfilter.Family(x.FamilyNameFilter), nil
	case *tabulapb.RowFilter_ColumnQualifierRegexFilter:
		return rowfilter.QualifierRegex(string(x.ColumnQualifierRegexFilter)), nil
	case *tabulapb.RowFilter_ColumnRangeFilter:
		r := x.ColumnRangeFilter
		return &rowfilter.Filter{Kind: rowfilter.KindQualifierRange, Family: r.GetFamilyName(),
			Start: r.GetStartQualifier(), End: emptyIsNil(r.GetEndQualifier()),
			StartOpen: r.GetStartOpen(), EndOpen: r.GetEndOpen() && len(r.GetEndQualifier()) > 0}, nil
	case *tabulapb.RowFilter_TimestampRangeFilter:
		r := x.TimestampRangeFilter
		return rowfilter.TimestampRange(r.GetStartTimestampMicros(), r.GetEndTimestampMicros()), nil
	case *tabulapb.RowFilter_ValueRegexFilter:
		return rowfilter.ValueRegex(string(x.ValueRegexFilter)), nil
	case *tabulapb.RowFilter_ValueRangeFilter:
		r := x.ValueRangeFilter
		return &rowfilter.Filter{Kind: rowfilter.KindValueRange,
			Start: r.GetStartValue(), End: emptyIsNil(r.GetEndValue()),
			StartOpen: r.GetStartOpen(), EndOpen: r.GetEndOpen() && len(r.GetEndValue()) > 0}, nil
	case *tabulapb.RowFilter_CellsPerRowLimitFilter:
		return countFilter(rowfilter.KindCellsPerRowLimit, x.CellsPerRowLimitFilter, path+".cells_per_row_limit_filter")
	case *tabulapb.RowFilter_CellsPerRowOffsetFilter:
		return countFilter(rowfilter.KindCellsPerRowOffset, x.CellsPerRowOffsetFilter, path+".cells_per_row_offset_filter")
	case *tabulapb.RowFilter_CellsPerColumnLimitFilter:
		return countFilter(rowfilter.KindCellsPerColumnLimit, x.CellsPerColumnLimitFilter, path+".cells_per_column_limit_filter")
	}
	return nil, cell.Invalidf("%s has no filter set; set exactly one of its oneof fields", path)
}

func filtersFromProto(ps []*tabulapb.RowFilter, path string, depth int) ([]*rowfilter.Filter, error) {
	fs := make([]*rowfilter.Filter, 0, len(ps))
	for i, c := range ps {
		f, err := filterFromProto(c, indexPath(path, i), depth+1)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func countFilter(k rowfilter.Kind, n int32, path string) (*rowfilter.Filter, error) {
	if n < 0 {
		return nil, cell.Invalidf("%s is %d; it must not be negative", path, n)
	}
	return &rowfilter.Filter{Kind: k, N: int(n)}, nil
}

// FilterToProto converts a filter tree; nil stays nil (pass everything).
// A node of an unknown kind becomes a RowFilter with nothing set, which
// the server rejects as invalid. An End that is empty but not nil (the
// empty string as a bound, as Bigtable's end_*_closed "" or end_*_open
// "") cannot be told apart from "no bound" on the wire, so it is sent as
// a range that passes the same values: closed "" as open "\x00" (only ""
// lies below "\x00"), open "" as the empty range ("", "\x00").
func FilterToProto(f *rowfilter.Filter) *tabulapb.RowFilter {
	if f == nil {
		return nil
	}
	p := &tabulapb.RowFilter{}
	switch f.Kind {
	case rowfilter.KindPass:
		p.Filter = &tabulapb.RowFilter_PassAllFilter{PassAllFilter: true}
	case rowfilter.KindBlock:
		p.Filter = &tabulapb.RowFilter_BlockAllFilter{BlockAllFilter: true}
	case rowfilter.KindStripValue:
		p.Filter = &tabulapb.RowFilter_StripValueTransformer{StripValueTransformer: true}
	case rowfilter.KindChain:
		p.Filter = &tabulapb.RowFilter_Chain_{Chain: &tabulapb.RowFilter_Chain{Filters: filtersToProto(f.Filters)}}
	case rowfilter.KindInterleave:
		p.Filter = &tabulapb.RowFilter_Interleave_{Interleave: &tabulapb.RowFilter_Interleave{Filters: filtersToProto(f.Filters)}}
	case rowfilter.KindCondition:
		p.Filter = &tabulapb.RowFilter_Condition_{Condition: &tabulapb.RowFilter_Condition{
			PredicateFilter: FilterToProto(f.Predicate), TrueFilter: FilterToProto(f.True), FalseFilter: FilterToProto(f.False)}}
	case rowfilter.KindRowKeyRegex:
		p.Filter = &tabulapb.RowFilter_RowKeyRegexFilter{RowKeyRegexFilter: []byte(f.Regex)}
	case rowfilter.KindRowKeyPrefix:
		p.Filter = &tabulapb.RowFilter_RowKeyPrefixFilter{RowKeyPrefixFilter: nonNil(f.Prefix)}
	case rowfilter.KindFamilyRegex:
		p.Filter = &tabulapb.RowFilter_FamilyNameRegexFilter{FamilyNameRegexFilter: f.Regex}
	case rowfilter.KindFamily:
		p.Filter = &tabulapb.RowFilter_FamilyNameFilter{FamilyNameFilter: f.Family}
	case rowfilter.KindQualifierRegex:
		p.Filter = &tabulapb.RowFilter_ColumnQualifierRegexFilter{ColumnQualifierRegexFilter: []byte(f.Regex)}
	case rowfilter.KindQualifierRange:
		r := wireRange(f)
		p.Filter = &tabulapb.RowFilter_ColumnRangeFilter{ColumnRangeFilter: &tabulapb.ColumnRange{
			FamilyName: f.Family, StartQualifier: r.Start, EndQualifier: r.End,
			StartOpen: r.StartOpen, EndOpen: r.EndOpen && len(r.End) > 0}}
	case rowfilter.KindTimestampRange:
		p.Filter = &tabulapb.RowFilter_TimestampRangeFilter{TimestampRangeFilter: &tabulapb.TimestampRange{
			StartTimestampMicros: f.TimeStart, EndTimestampMicros: f.TimeEnd}}
	case rowfilter.KindValueRegex:
		p.Filter = &tabulapb.RowFilter_ValueRegexFilter{ValueRegexFilter: []byte(f.Regex)}
	case rowfilter.KindValueRange:
		r := wireRange(f)
		p.Filter = &tabulapb.RowFilter_ValueRangeFilter{ValueRangeFilter: &tabulapb.ValueRange{
			StartValue: r.Start, EndValue: r.End, StartOpen: r.StartOpen, EndOpen: r.EndOpen && len(r.End) > 0}}
	case rowfilter.KindSink:
		p.Filter = &tabulapb.RowFilter_Sink{Sink: true}
	case rowfilter.KindLabel:
		p.Filter = &tabulapb.RowFilter_ApplyLabelTransformer{ApplyLabelTransformer: f.Label}
	case rowfilter.KindRowSample:
		p.Filter = &tabulapb.RowFilter_RowSampleFilter{RowSampleFilter: f.Probability}
	case rowfilter.KindCellsPerRowLimit:
		p.Filter = &tabulapb.RowFilter_CellsPerRowLimitFilter{CellsPerRowLimitFilter: saturate32(f.N)}
	case rowfilter.KindCellsPerRowOffset:
		p.Filter = &tabulapb.RowFilter_CellsPerRowOffsetFilter{CellsPerRowOffsetFilter: saturate32(f.N)}
	case rowfilter.KindCellsPerColumnLimit:
		p.Filter = &tabulapb.RowFilter_CellsPerColumnLimitFilter{CellsPerColumnLimitFilter: saturate32(f.N)}
	}
	return p
}

func filtersToProto(fs []*rowfilter.Filter) []*tabulapb.RowFilter {
	out := make([]*tabulapb.RowFilter, len(fs))
	for i, f := range fs {
		out[i] = FilterToProto(f)
		if out[i] == nil {
			out[i] = &tabulapb.RowFilter{} // a nil child is invalid; say so on the server
		}
	}
	return out
}

// wireRange returns f's bounds as the wire can carry them: an empty
// non-nil End (which the wire would read as "no bound") becomes the range
// that passes the same values.
func wireRange(f *rowfilter.Filter) rowfilter.Filter {
	r := rowfilter.Filter{Start: f.Start, End: f.End, StartOpen: f.StartOpen, EndOpen: f.EndOpen}
	if f.End == nil || len(f.End) > 0 {
		return r
	}
	if !f.EndOpen { // <= "": only "" itself, which is < "\x00"
		r.End, r.EndOpen = []byte{0}, true
		return r
	}
	// < "": nothing. ("", "\x00") is empty too.
	return rowfilter.Filter{Start: []byte{}, StartOpen: true, End: []byte{0}, EndOpen: true}
}

func emptyIsNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
