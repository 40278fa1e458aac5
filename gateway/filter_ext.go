package gateway

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/rowfilter"
)

// extendedFilter converts the filters that emit cells elsewhere or mark
// them: sinks, labels and row samples (rowfilter checks their arguments as
// Bigtable does: labels of [a-z0-9-]{1,15}, 0 < p < 1, no sink in a
// condition).
func extendedFilter(f *btpb.RowFilter, path string) (*rowfilter.Filter, error) {
	switch x := f.GetFilter().(type) {
	case *btpb.RowFilter_Sink:
		if !x.Sink {
			return nil, invalidf("%s.sink must be true if set", path)
		}
		return rowfilter.Sink(), nil
	case *btpb.RowFilter_ApplyLabelTransformer:
		return rowfilter.Label(x.ApplyLabelTransformer), nil
	case *btpb.RowFilter_RowSampleFilter:
		return rowfilter.RowSample(x.RowSampleFilter), nil
	case *btpb.RowFilter_ValueBitmaskFilter:
		return nil, unimplemented(path+".value_bitmask_filter", "not yet in Tabula's filters; use value_regex_filter")
	}
	return nil, invalidf("%s: unknown filter %T", path, f.GetFilter())
}
