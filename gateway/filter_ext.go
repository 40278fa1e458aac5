package gateway

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/rowfilter"
)

// extendedFilter converts the filters that need more than Tabula's first
// filter set: sinks, labels and row samples.
func extendedFilter(f *btpb.RowFilter, path string) (*rowfilter.Filter, error) {
	switch f.GetFilter().(type) {
	case *btpb.RowFilter_Sink:
		return nil, unimplemented("RowFilter.sink", "not yet in the tablet servers' filters")
	case *btpb.RowFilter_ApplyLabelTransformer:
		return nil, unimplemented("RowFilter.apply_label_transformer", "not yet in the tablet servers' filters")
	case *btpb.RowFilter_RowSampleFilter:
		return nil, unimplemented("RowFilter.row_sample_filter", "not yet in the tablet servers' filters")
	}
	return nil, invalidf("%s: unknown filter %T", path, f.GetFilter())
}
