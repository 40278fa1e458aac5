package export

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

// templatesSchema is the Dataflow templates' BigtableRow schema as their
// schema file lays it out (namespace, field order, the timestamp's
// field-level logicalType), written independently of bigtableRowSchema.
const templatesSchema = `{
  "name": "BigtableRow", "type": "record", "namespace": "com.google.cloud.teleport.bigtable",
  "fields": [
    {"name": "key", "type": "bytes"},
    {"name": "cells", "type": {"type": "array", "items": {
      "name": "BigtableCell", "type": "record",
      "fields": [
        {"name": "family", "type": "string"},
        {"name": "qualifier", "type": "bytes"},
        {"name": "timestamp", "type": "long", "logicalType": "timestamp-micros"},
        {"name": "value", "type": "bytes"}]}}}]}`

// hambaFile writes records with github.com/hamba/avro/v2's generic OCF
// encoder (deflate, small blocks: another codec and block layout than
// Tabula's writer uses).
func hambaFile(t testing.TB, schema string, records []map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := ocf.NewEncoder(schema, &buf, ocf.WithCodec(ocf.Deflate), ocf.WithBlockLength(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func toGeneric(rows []Row) []map[string]any {
	var recs []map[string]any
	for _, r := range rows {
		cells := []any{}
		for _, c := range r.Cells {
			cells = append(cells, map[string]any{"family": c.Family, "qualifier": nonNil(c.Qualifier), "timestamp": c.Timestamp, "value": nonNil(c.Value)})
		}
		recs = append(recs, map[string]any{"key": nonNil(r.Key), "cells": cells})
	}
	return recs
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// A file written by a generic Avro writer in exactly the templates' schema
// (as the Cloud_Bigtable_to_GCS_Avro template writes it) is read by
// NewAvroReader with the same cells and no header.
func TestAvroReadsTemplatesFile(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rows := testRows(rand.New(rand.NewPCG(seed, 0)))
	file := hambaFile(t, templatesSchema, toGeneric(rows))
	r, h, err := NewAvroReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("header %q from a file without one", h)
	}
	equalRows(t, readAll(t, r), rows)
}

// An independent reader (hamba's generic OCF decoder) reads Tabula's Avro
// file, checks its schema is the templates' and gets the same cells and
// the header.
func TestAvroReadByGenericReader(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rows := testRows(rand.New(rand.NewPCG(seed, 0)))
	header := []byte("hdr\x00")
	file := writeFile(t, formats[1], header, rows)
	dec, err := ocf.NewDecoder(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if got := dec.Metadata()[HeaderMetadataKey]; !bytes.Equal(got, header) {
		t.Fatalf("header %q, want %q", got, header)
	}
	if got, want := dec.Schema().Fingerprint(), mustFingerprint(t, templatesSchema); got != want {
		t.Fatalf("schema %s differs from the templates' (canonical form)", dec.Schema())
	}
	var got []Row
	for dec.HasNext() {
		var rec struct {
			Key   []byte `avro:"key"`
			Cells []struct {
				Family    string `avro:"family"`
				Qualifier []byte `avro:"qualifier"`
				Timestamp int64  `avro:"timestamp"`
				Value     []byte `avro:"value"`
			} `avro:"cells"`
		}
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		row := Row{Key: rec.Key}
		for _, c := range rec.Cells {
			row.Cells = append(row.Cells, Cell(c))
		}
		got = append(got, row)
	}
	if err := dec.Error(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	equalRows(t, got, rows)
}

func mustFingerprint(t testing.TB, schema string) [32]byte {
	t.Helper()
	s, err := avro.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	return s.Fingerprint()
}
