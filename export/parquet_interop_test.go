package export

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A Parquet file of the row schema as Arrow-based writers (pyarrow, Spark
// with its defaults, DuckDB's COPY) lay it out: a three-level LIST
// (cells.list.element) with every field nullable and no nulls in it. The
// reader takes it as it takes the templates' two-level list.
func TestParquetReadsThreeLevelList(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rows := testRows(rand.New(rand.NewPCG(seed, 0)))
	cellType := arrow.StructOf(
		arrow.Field{Name: "family", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "qualifier", Type: arrow.BinaryTypes.Binary, Nullable: true},
		arrow.Field{Name: "timestamp", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "cells", Type: arrow.ListOf(cellType), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	keys := b.Field(0).(*array.BinaryBuilder)
	lists := b.Field(1).(*array.ListBuilder)
	cells := lists.ValueBuilder().(*array.StructBuilder)
	for _, r := range rows {
		keys.Append(r.Key)
		lists.Append(true)
		for _, c := range r.Cells {
			cells.Append(true)
			cells.FieldBuilder(0).(*array.StringBuilder).Append(c.Family)
			cells.FieldBuilder(1).(*array.BinaryBuilder).Append(nonNil(c.Qualifier))
			cells.FieldBuilder(2).(*array.Int64Builder).Append(c.Timestamp)
			cells.FieldBuilder(3).(*array.BinaryBuilder).Append(nonNil(c.Value))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(100))
	fw, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	r, h, err := NewParquetReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("header %q from a file without one", h)
	}
	pr := r.(*parquetReader)
	if got := pr.fr.MetaData().Schema.Column(pr.leaves[pqValue].col).ColumnPath().String(); got != "cells.list.element.value" {
		t.Fatalf("the test wrote %s, not a three-level list", got)
	}
	equalRows(t, readAll(t, r), rows)
}
