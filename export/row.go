// Package export owns the file formats in which tables leave and enter
// Tabula: JSON lines, and Parquet and Avro in Cloud Bigtable's row schema
// (docs/OPERATIONS.md, "Exports and imports"), so that batch jobs can
// import it; the `tabula` CLI only parses flags around it.
//
// Every format carries the same thing: rows, each with every version of its
// cells, in key order, optionally preceded by a Header that lets an import
// recreate the table as it was.
package export

// Cell is one version of one column, as Cloud Bigtable's row schema names
// it (BigtableCell: family, qualifier, timestamp in microseconds, value).
type Cell struct {
	Family    string
	Qualifier []byte
	Timestamp int64
	Value     []byte
}

// Row is one row with all the cells an export holds of it, in read order
// (family, qualifier, then newest timestamp first), as Cloud Bigtable's
// row schema names it (BigtableRow: key, cells).
type Row struct {
	Key   []byte
	Cells []Cell
}

// RowWriter writes rows of one file, in key order. Close finishes the file
// (footers, buffered pages); the file is not valid before Close returns
// nil. A writer does not close the io.Writer it was given.
type RowWriter interface {
	WriteRow(Row) error
	Close() error
}

// RowReader reads the rows of one file in the order they were written; it
// returns io.EOF after the last one. The Row it returns, and the slices in
// it, are valid until the next call.
type RowReader interface {
	ReadRow() (Row, error)
}

// FileOptions are what every format's writer is given besides the rows.
type FileOptions struct {
	// Header is the export's header (schema and cut) as this package
	// encodes it, stored verbatim in the file's metadata where the format
	// has room for it (the first line of JSON lines; Parquet's key-value
	// metadata; Avro's file metadata); nil stores none, as files made by
	// other tools have none.
	Header []byte
}
