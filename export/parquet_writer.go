package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// parquetRowGroupBytes bounds the cell bytes (keys, families, qualifiers,
// values, 8 per timestamp) a Parquet writer buffers before it writes them
// out as one row group, while it buffers the next: a writer holds about
// twice this much plus one row, and a row larger than it makes a row group
// of its own. 8 MiB (about 80,000 cells of 100 B) keeps row groups large
// enough for readers to skip by their statistics (DuckDB writes groups of
// 122,880 rows) while an export touches little new memory: with 32 MiB
// groups, faulting in the buffers of two of them and the collections a
// larger heap paces cost the client 8% more CPU for a file 0.05% smaller
// (docs/BENCHMARKS.md "Parquet export at the JSON-lines export's rate").
const parquetRowGroupBytes = 8 << 20

// parquetOutBuffer is the buffer between the library and the file: a data
// page is about 1 MiB before compression, so a buffer of one holds a few
// of the compressed pages and their headers per write.
const parquetOutBuffer = 1 << 20

// The leaf columns in schema order (parquetSchema).
const (
	pqKey = iota
	pqFamily
	pqQualifier
	pqTimestamp
	pqValue
	pqColumns
)

// parquetSchema is the Parquet schema parquet-avro makes of the row schema
// with its default settings (the Dataflow templates write through
// parquet-avro's AvroParquetWriter without changing them):
//
//	message com.google.cloud.teleport.bigtable.BigtableRow {
//	  required binary key;
//	  required group cells (LIST) {
//	    repeated group array {
//	      required binary family (STRING);
//	      required binary qualifier;
//	      required int64 timestamp;
//	      required binary value;
//	    }
//	  }
//	}
//
// That is the two-level list ("parquet.avro.write-old-list-structure",
// true by default): the files compare equal column by column to the
// templates' own, and every reader of Parquet's backward-compatibility
// rules (Spark, DuckDB, BigQuery, pyarrow) reads it as a list of structs.
func parquetSchema() (*schema.GroupNode, error) {
	family, err := schema.NewPrimitiveNodeLogical("family", parquet.Repetitions.Required,
		schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
	if err != nil {
		return nil, err
	}
	cell, err := schema.NewGroupNode("array", parquet.Repetitions.Repeated, schema.FieldList{
		family,
		schema.NewByteArrayNode("qualifier", parquet.Repetitions.Required, -1),
		schema.NewInt64Node("timestamp", parquet.Repetitions.Required, -1),
		schema.NewByteArrayNode("value", parquet.Repetitions.Required, -1),
	}, -1)
	if err != nil {
		return nil, err
	}
	cells, err := schema.NewGroupNodeConverted("cells", parquet.Repetitions.Required,
		schema.FieldList{cell}, schema.ConvertedTypes.List, -1)
	if err != nil {
		return nil, err
	}
	return schema.NewGroupNode(bigtableRowName, parquet.Repetitions.Required, schema.FieldList{
		schema.NewByteArrayNode("key", parquet.Repetitions.Required, -1),
		cells,
	}, -1)
}

// byteColumn buffers one binary column's values in chunks of
// byteChunk bytes that never move once written (growing one buffer would
// copy a row group's bytes again at every doubling), and where each value
// is in them as a span: pointer-free, unlike the []parquet.ByteArray the
// library's WriteBatch takes, which are made a batch at a time (values).
// A row group's million slice headers were a million pointers for the
// garbage collector to scan and write barriers for every append that
// grew them, a fifth of a Parquet export's CPU time (docs/BENCHMARKS.md
// "Parquet export at the JSON-lines export's rate").
type byteColumn struct {
	chunks  [][]byte // in use; the value being added goes into the last
	free    [][]byte // emptied by reset, reused by add
	spans   []byteSpan
	scratch []parquet.ByteArray // values' result, reused
}

// byteSpan is where a value is: chunks[chunk][start:end].
type byteSpan struct{ chunk, start, end uint32 }

const byteChunk = 1 << 20

func (c *byteColumn) add(b []byte) {
	n := len(c.chunks)
	if n == 0 || cap(c.chunks[n-1])-len(c.chunks[n-1]) < len(b) {
		var chunk []byte
		if k := len(c.free); k > 0 && cap(c.free[k-1]) >= len(b) {
			chunk, c.free = c.free[k-1], c.free[:k-1]
		} else {
			chunk = make([]byte, 0, max(byteChunk, len(b)))
		}
		c.chunks = append(c.chunks, chunk)
		n++
	}
	last := c.chunks[n-1]
	start := len(last)
	last = append(last, b...)
	c.chunks[n-1] = last
	c.spans = append(c.spans, byteSpan{uint32(n - 1), uint32(start), uint32(len(last))})
}

// size is the length of value v.
func (c *byteColumn) size(v int) int { return int(c.spans[v].end - c.spans[v].start) }

// values returns values [lo, hi) as the library takes them, valid until
// the next call (the bytes they point to stay until reset).
func (c *byteColumn) values(lo, hi int) []parquet.ByteArray {
	c.scratch = c.scratch[:0]
	for _, s := range c.spans[lo:hi] {
		c.scratch = append(c.scratch, parquet.ByteArray(c.chunks[s.chunk][s.start:s.end:s.end]))
	}
	return c.scratch
}

// reset empties the column, keeping its chunks of the usual size for the
// next row group (a chunk made for one large value is let go).
func (c *byteColumn) reset() {
	for _, ch := range c.chunks {
		if cap(ch) == byteChunk {
			c.free = append(c.free, ch[:0])
		}
	}
	clear(c.chunks)
	c.chunks = c.chunks[:0]
	c.spans = c.spans[:0]
	clear(c.scratch)
	c.scratch = c.scratch[:0]
}

// pqGroup is one row group's rows, buffered column by column.
type pqGroup struct {
	keys                    byteColumn
	families, quals, values byteColumn
	timestamps              []int64
	defLevels, repLevels    []int16 // shared by the four cell columns
	buffered                int
}

func (g *pqGroup) reset() {
	g.keys.reset()
	g.families.reset()
	g.quals.reset()
	g.values.reset()
	g.timestamps, g.defLevels, g.repLevels = g.timestamps[:0], g.defLevels[:0], g.repLevels[:0]
	g.buffered = 0
}

// parquetWriter buffers a row group while the one before is encoded,
// compressed and written by a goroutine of its own: an export reads rows
// from the cluster and encodes them on two cores, not one after the other
// (docs/BENCHMARKS.md "Export formats: the library and the real export").
type parquetWriter struct {
	fw  *file.Writer
	out *bufio.Writer // between fw and the caller's writer

	cur      *pqGroup   // being buffered
	spare    *pqGroup   // emptied, for the next
	inflight *pqGroup   // being written by the goroutine, which sends to done
	done     chan error // buffered: the goroutine never waits
	err      error
	closed   bool
}

// NewParquetWriter returns a writer of one Parquet file in Cloud
// Bigtable's row schema (parquetSchema), Snappy-compressed as the Dataflow
// templates write it, with o.Header (if any) in the key-value metadata
// under HeaderMetadataKey. Parquet's key-value metadata holds UTF-8 text,
// so a header that is not valid UTF-8 is refused (this package's header
// encoding is text).
func NewParquetWriter(w io.Writer, o FileOptions) (RowWriter, error) {
	if !utf8.Valid(o.Header) {
		return nil, errors.New("export: parquet: the header is not UTF-8 text, which Parquet's key-value metadata requires")
	}
	sc, err := parquetSchema()
	if err != nil {
		return nil, fmt.Errorf("export: parquet schema: %w", err)
	}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		// A dictionary pays for families only (a few per table); keys,
		// qualifiers and values would only fall back from it.
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("cells.array.family", true),
		// Statistics of values and qualifiers prune nothing a reader asks.
		parquet.WithStatsFor("cells.array.value", false),
		parquet.WithStatsFor("cells.array.qualifier", false),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDataPageSize(pqPageBytes),
		parquet.WithCreatedBy("tabula"),
	)
	meta := metadata.NewKeyValueMetadata()
	if err := meta.Append("parquet.avro.schema", bigtableRowSchema); err != nil {
		return nil, err
	}
	if o.Header != nil {
		if err := meta.Append(HeaderMetadataKey, string(o.Header)); err != nil {
			return nil, err
		}
	}
	// The library writes each page header and each page with a call of
	// its own: straight to a file that would be two system calls per page
	// of about 1 MiB. A *bufio.Writer is no io.Closer, so the library's Close,
	// which closes an io.Closer it writes to, leaves w open (RowWriter's
	// contract).
	out := bufio.NewWriterSize(w, parquetOutBuffer)
	fw, err := file.NewParquetWriterWithError(out, sc, file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, fmt.Errorf("export: parquet writer: %w", err)
	}
	return &parquetWriter{fw: fw, out: out, cur: &pqGroup{}, done: make(chan error, 1)}, nil
}

func (p *parquetWriter) WriteRow(r Row) error {
	if p.err != nil {
		return p.err
	}
	if p.closed {
		return errors.New("export: parquet: WriteRow after Close")
	}
	g := p.cur
	g.keys.add(r.Key)
	g.buffered += len(r.Key)
	if len(r.Cells) == 0 {
		// An empty list: one level entry, no value, in every cell column.
		g.defLevels = append(g.defLevels, 0)
		g.repLevels = append(g.repLevels, 0)
	}
	for i, c := range r.Cells {
		rep := int16(1)
		if i == 0 {
			rep = 0
		}
		g.defLevels = append(g.defLevels, 1)
		g.repLevels = append(g.repLevels, rep)
		g.families.add([]byte(c.Family))
		g.quals.add(c.Qualifier)
		g.timestamps = append(g.timestamps, c.Timestamp)
		g.values.add(c.Value)
		g.buffered += len(c.Family) + len(c.Qualifier) + 8 + len(c.Value)
	}
	if g.buffered >= parquetRowGroupBytes {
		if p.err = p.wait(); p.err == nil {
			// Written in the background while the next group fills.
			p.inflight, p.cur, p.spare = g, p.spare, nil
			if p.cur == nil {
				p.cur = &pqGroup{}
			}
			go func() { p.done <- p.flush(g) }()
		}
	}
	return p.err
}

// wait waits for the row group being written, if any, and keeps it for
// the next.
func (p *parquetWriter) wait() error {
	if p.inflight == nil {
		return nil
	}
	err := <-p.done
	p.inflight.reset()
	p.spare, p.inflight = p.inflight, nil
	return err
}

// flush writes the rows of g as one row group, column after column.
func (p *parquetWriter) flush(g *pqGroup) error {
	if len(g.keys.spans) == 0 {
		return nil
	}
	rg, err := p.fw.AppendRowGroupChecked()
	if err != nil {
		return fmt.Errorf("export: parquet row group: %w", err)
	}
	for col := 0; col < pqColumns; col++ {
		cw, err := rg.NextColumn()
		if err != nil {
			return fmt.Errorf("export: parquet column %d: %w", col, err)
		}
		switch col {
		case pqKey:
			keys := &g.keys
			err = writeBatches(len(keys.spans), nil, func(_, v int) (int, bool) { return keys.size(v), true },
				func(vlo, vhi, _, _ int) error {
					_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(keys.values(vlo, vhi), nil, nil)
					return err
				})
		case pqTimestamp:
			err = writeBatches(len(g.timestamps), g.repLevels, g.cellValue(func(int) int { return 8 }),
				func(vlo, vhi, llo, lhi int) error {
					_, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(g.timestamps[vlo:vhi], g.defLevels[llo:lhi], g.repLevels[llo:lhi])
					return err
				})
		default:
			src := &g.families
			if col == pqQualifier {
				src = &g.quals
			} else if col == pqValue {
				src = &g.values
			}
			err = writeBatches(len(src.spans), g.repLevels, g.cellValue(src.size),
				func(vlo, vhi, llo, lhi int) error {
					_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(src.values(vlo, vhi), g.defLevels[llo:lhi], g.repLevels[llo:lhi])
					return err
				})
		}
		if err == nil {
			err = cw.Close()
		}
		if err != nil {
			return fmt.Errorf("export: parquet column %d: %w", col, err)
		}
	}
	if err := rg.Close(); err != nil {
		return fmt.Errorf("export: parquet row group: %w", err)
	}
	return nil
}

// pqBatchBytes is how many value bytes go to the library per WriteBatch:
// it cuts a data page (pqPageBytes) only between batches, so one batch of
// a whole row group would make one page of it.
const pqBatchBytes = pqPageBytes / 4

// pqPageBytes is the data page size the writer asks for (the library's
// default is 1 MiB). The library encodes a page into buffers it pools
// (zeroed when returned, regrown by doubling when the collector has
// emptied the pool); pages of 128 KiB keep those small and in cache: 15%
// less client CPU in an export than 1 MiB pages, for a file 0.5% larger
// (docs/BENCHMARKS.md "Parquet export at the JSON-lines export's rate").
const pqPageBytes = 128 << 10

// cellValue turns a per-value size into a per-level one for writeBatches:
// a level entry with definition level 0 (an empty list) holds no value.
func (g *pqGroup) cellValue(size func(v int) int) func(l, v int) (int, bool) {
	return func(l, v int) (int, bool) {
		if g.defLevels[l] == 0 {
			return 0, false
		}
		return size(v), true
	}
}

// writeBatches calls write with consecutive ranges of values [vlo, vhi)
// and of level entries [llo, lhi) of about pqBatchBytes each, cut between
// rows (at repetition level 0). size(l, v) is the size of value v at level
// entry l, false where the entry holds no value. Without levels (the key
// column) every value is a row and a level entry of its own.
func writeBatches(nvals int, rep []int16, size func(l, v int) (int, bool), write func(vlo, vhi, llo, lhi int) error) error {
	nlev := len(rep)
	if rep == nil {
		nlev = nvals
	}
	llo, vlo, v, n := 0, 0, 0, 0
	for l := 0; l < nlev; l++ {
		if (rep == nil || rep[l] == 0) && l > llo && n >= pqBatchBytes {
			if err := write(vlo, v, llo, l); err != nil {
				return err
			}
			llo, vlo, n = l, v, 0
		}
		if b, ok := size(l, v); ok {
			n += b
			v++
		}
	}
	return write(vlo, v, llo, nlev)
}

func (p *parquetWriter) Close() error {
	if p.closed {
		return p.err
	}
	p.closed = true
	if err := p.wait(); p.err == nil {
		p.err = err
	}
	if p.err == nil {
		p.err = p.flush(p.cur)
	}
	if err := p.fw.Close(); p.err == nil && err != nil {
		p.err = fmt.Errorf("export: parquet close: %w", err)
	}
	if err := p.out.Flush(); p.err == nil && err != nil {
		p.err = fmt.Errorf("export: parquet: %w", err)
	}
	return p.err
}
