package gateway

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/client"
)

// rowSet converts a Bigtable RowSet. An empty row key is refused as Cloud
// Bigtable refuses it (the emulator silently matches nothing). An absent or
// empty RowSet means the whole table, as in Bigtable; a set whose ranges are all empty means no
// rows. Bigtable's open and closed bounds become Tabula's [start, end)
// ranges: an open start or a closed end moves to the key's successor (the
// key followed by a zero byte), the next possible key. An empty end key, open
// or closed, means the end of the table.
func rowSet(rs *btpb.RowSet) (client.RowSet, error) {
	if len(rs.GetRowKeys()) == 0 && len(rs.GetRowRanges()) == 0 {
		return client.InfiniteRange(nil), nil
	}
	sets := []client.RowSet{}
	keys := rs.GetRowKeys()
	for _, k := range keys {
		if len(k) == 0 {
			return nil, invalidf("Row keys must be non-empty")
		}
	}
	if len(keys) > 0 {
		sets = append(sets, client.RowList(keys...))
	}
	for _, r := range rs.GetRowRanges() {
		sets = append(sets, client.NewRange(rangeBounds(r)))
	}
	return client.Union(sets...), nil
}

// rangeBounds converts a Bigtable RowRange to [start, end) as rowSet
// does (nil: unbounded).
func rangeBounds(r *btpb.RowRange) (start, end []byte) {
	switch k := r.GetStartKey().(type) {
	case *btpb.RowRange_StartKeyClosed:
		start = k.StartKeyClosed
	case *btpb.RowRange_StartKeyOpen:
		start = successor(k.StartKeyOpen)
	}
	switch k := r.GetEndKey().(type) {
	case *btpb.RowRange_EndKeyOpen:
		if len(k.EndKeyOpen) > 0 {
			end = k.EndKeyOpen
		}
	case *btpb.RowRange_EndKeyClosed:
		if len(k.EndKeyClosed) > 0 {
			end = successor(k.EndKeyClosed)
		}
	}
	return start, end
}

// successor returns the smallest key greater than k.
func successor(k []byte) []byte { return append(append(make([]byte, 0, len(k)+1), k...), 0) }
