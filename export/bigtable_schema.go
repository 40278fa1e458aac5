package export

// The Cloud Bigtable row schema as Google's Dataflow templates
// (Cloud_Bigtable_to_GCS_Parquet/_Avro, GCS_Parquet/_Avro_to_Cloud_Bigtable)
// declare it: one record per row, every version of every cell in it
// (docs/OPERATIONS.md, "Parquet and Avro files").

// HeaderMetadataKey is the key under which a Parquet file's key-value
// metadata and an Avro file's metadata hold FileOptions.Header. Files made
// by other tools have no such key; their readers return a nil header.
const HeaderMetadataKey = "tabula.header"

// bigtableRowName is the Avro record's full name; parquet-avro names the
// Parquet message after it, so both formats carry the same name.
const bigtableRowName = "com.google.cloud.teleport.bigtable.BigtableRow"

// bigtableRowSchema is the Avro schema JSON written into both formats'
// metadata (Avro's avro.schema, Parquet's parquet.avro.schema, which
// parquet-avro readers use to read a file back as the records it was
// written from). The timestamp's "logicalType" sits on the field, as in the
// templates' schema, where Avro treats it as a plain property: the type
// stays a long (microseconds), with no logical type.
const bigtableRowSchema = `{"type":"record","name":"BigtableRow","namespace":"com.google.cloud.teleport.bigtable",` +
	`"fields":[{"name":"key","type":"bytes"},` +
	`{"name":"cells","type":{"type":"array","items":{"type":"record","name":"BigtableCell",` +
	`"fields":[{"name":"family","type":"string"},{"name":"qualifier","type":"bytes"},` +
	`{"name":"timestamp","type":"long","logicalType":"timestamp-micros"},{"name":"value","type":"bytes"}]}}}]}`
