// Package interop holds tests in which other tools read and write Tabula's
// export files: DuckDB (through its Go bindings, which need cgo and link
// DuckDB's library, hence a module of its own so that the rest of the
// project builds without either) reads the Parquet files of package export
// and writes Parquet files that package export reads (docs/OPERATIONS.md,
// "Parquet and Avro files"). `make test` runs them.
package interop
