// Package rowfilter is Tabula's RowFilter: Bigtable's filter language,
// evaluated on one row at a time (docs/FILTERS.md).
//
// A Filter is a tree that maps one to one to the protobuf RowFilter oneof:
// chains (each filter sees the output of the one before), interleaves (the
// union of each branch's output, merged in read order, duplicates kept),
// conditions (if the predicate emits any cell, the true branch runs on the
// row, else the false branch), and primitives on the row key, family,
// qualifier, timestamp and value, plus per-row and per-column cell limits,
// value stripping, labels, row sampling, and sinks (whose cells go straight
// to the output). Regular expressions are RE2 in Latin-1 mode, as in
// Bigtable: every byte is one character, so "." and \C match one byte; they
// must match the whole string.
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
// Filters also have a textual form, the filter language of docs/FILTERS.md
// that `tabula scan --filter` takes: Parse reads it and String prints it,
// and Parse(f.String()) is f:
//
//	f, err := rowfilter.Parse(`chain(family("cf"), cells_per_column_limit(1))`)
//
// Byte strings in it are Go-quoted, as the CLI prints keys and values
// (Quote, Unquote): "\xff\x01" is the bytes FF 01.
//
// The planner hints RowMayMatch, Families and TimeRange tell the engine
// what it may skip reading without changing what Apply returns.
package rowfilter
