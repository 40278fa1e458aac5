// Package rowfilter is Tabula's RowFilter: Bigtable's filter language,
// evaluated on one row at a time (docs/CONTRACTS.md §5).
//
// A Filter is a tree that maps one to one to the protobuf RowFilter oneof:
// chains (each filter sees the output of the one before), interleaves (the
// union of each branch's output, merged in read order, duplicates kept),
// conditions (if the predicate emits any cell, the true branch runs on the
// row, else the false branch), and primitives on the row key, family,
// qualifier, timestamp and value, plus per-row and per-column cell limits
// and value stripping. Regular expressions are RE2 (Go's regexp) on bytes
// and must match the whole string; \C matches any character, including
// "\n" and bytes that are not UTF-8.
//
// Compile validates a filter once per request; the Compiled filter is then
// applied to each row's cells, which must arrive in read order (family,
// qualifier ascending, timestamp descending):
//
//	f := rowfilter.Chain(
//		rowfilter.Family("cf"),
//		rowfilter.QualifierRange("cf", []byte("a"), []byte("m")),
//		rowfilter.CellsPerColumnLimit(1),
//	)
//	c, err := rowfilter.Compile(f) // errors wrap cell.ErrInvalid
//	if err != nil { ... }
//	out := c.Apply(row, cells)
//
// The planner hints RowMayMatch, Families and TimeRange tell the engine
// what it may skip reading without changing what Apply returns.
package rowfilter
