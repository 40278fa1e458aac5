// Package cell is Tabula's shared vocabulary: cells, mutations, the limits
// that bound them, and the internal key that orders every entry the storage
// engine keeps.
//
// A cell is (row, family, qualifier, timestamp) → value. Reads return cells
// in row ascending, family ascending, qualifier ascending, timestamp
// descending order. Internally each entry also carries a sequence number so
// that a delete removes only what was written before it (docs/CONTRACTS.md §1).
//
// Within one column family the engine stores entries under an encoded Key
// whose byte order (bytes.Compare) is the read order:
//
//	m := cell.Mutation{Kind: cell.SetCell, Family: "cf", Qualifier: []byte("q"),
//		Timestamp: 1700000000000000, Value: []byte("v")}
//	if err := m.Validate(); err != nil { ... }
//	k := cell.AppendKey(nil, cell.Key{Row: []byte("r1"), Qualifier: m.Qualifier,
//		Timestamp: m.Timestamp, Seq: 42, Kind: cell.KindSet})
package cell
