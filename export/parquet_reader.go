package export

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// ErrParquetSchema is returned (wrapped) when a Parquet file is not in
// Cloud Bigtable's row schema.
var ErrParquetSchema = errors.New("export: parquet file is not in Cloud Bigtable's row schema")

// pqLeaf is where one of the row schema's fields is in a file's columns,
// and at which definition levels its values are there: a cell exists at
// level >= present, and its field is null at present when the leaf is
// optional (null = maxDef-1).
type pqLeaf struct {
	col      int
	maxDef   int16
	present  int16
	optional bool
}

// parquetReader reads one row group at a time: each of the five columns in
// full, then rows cut from them by repetition level. A row group is what a
// Parquet reader holds anyway (its pages are read by column chunk); the
// writer bounds it (parquetRowGroupBytes) for Tabula's own files.
type parquetReader struct {
	fr     *file.Reader
	leaves [pqColumns]pqLeaf
	// maxLevels bounds the entries of one column in one row group: run
	// lengths and dictionaries let a few bytes claim millions of values,
	// and a damaged file would have the reader decode them all. 256 cells
	// per byte of file is far beyond what real cells (their timestamps and
	// values differ) compress to.
	maxLevels int64
	group     int // next row group to load

	// The loaded row group.
	keys           []parquet.ByteArray
	fam, qual, val []parquet.ByteArray
	ts             []int64
	def, rep       []int16 // levels of the family column, checked equal in the others
	row            int     // next row in keys
	level, valIdx  int     // next level entry / next value of the cell columns
	cells          []Cell
}

// NewParquetReader opens a Parquet file in Cloud Bigtable's row schema:
// Tabula's own, the Dataflow templates' (parquet-avro's two-level list) or
// a three-level LIST as Spark or pyarrow write it, with optional fields
// read as required ones when they hold values. It returns the header from
// the key-value metadata (HeaderMetadataKey), nil when there is none.
func NewParquetReader(r io.ReaderAt, size int64) (rr RowReader, header []byte, err error) {
	defer recoverParquet(&err)
	if size < 0 {
		return nil, nil, errors.New("export: parquet: negative file size")
	}
	bound := 16<<20 + 64*size
	props := parquet.NewReaderProperties(&boundedAllocator{max: bound})
	// A page is as large as the file allows (the library's default stops
	// at 64 MiB compressed, and one Bigtable value may be 100 MiB) and
	// decompresses to no more than the allocator's bound.
	props.MaxCompressedPageSize = max(size, parquet.DefaultMaxCompressedPageSize)
	props.MaxUncompressedPageSize = bound
	fr, err := file.NewParquetReader(io.NewSectionReader(r, 0, size), file.WithReadProps(props))
	if err != nil {
		return nil, nil, fmt.Errorf("export: parquet: %w", err)
	}
	p := &parquetReader{fr: fr, maxLevels: 1<<16 + 256*size}
	if err := p.findColumns(fr.MetaData().Schema); err != nil {
		return nil, nil, err
	}
	if v := fr.MetaData().KeyValueMetadata().FindValue(HeaderMetadataKey); v != nil {
		header = []byte(*v)
	}
	return p, header, nil
}

// recoverParquet turns a panic inside the Parquet library on a damaged
// file into an error: a reader of files from elsewhere must not crash the
// process that reads them.
func recoverParquet(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("export: parquet: damaged file: %v", r)
	}
}

// boundedAllocator is the Parquet library's allocator (page and
// decompression buffers) with a bound on any one buffer: a damaged page
// header may claim gigabytes. A page decompresses to at most 64 times the
// whole file (Snappy, the templates' codec, to about 22 times); the panic
// becomes an error in recoverParquet.
type boundedAllocator struct{ max int64 }

func (a *boundedAllocator) Allocate(n int) []byte {
	if int64(n) > a.max {
		panic(fmt.Sprintf("a buffer of %d bytes, over the bound of %d for this file", n, a.max))
	}
	return memory.DefaultAllocator.Allocate(n)
}

func (a *boundedAllocator) Reallocate(n int, b []byte) []byte {
	if int64(n) > a.max {
		panic(fmt.Sprintf("a buffer of %d bytes, over the bound of %d for this file", n, a.max))
	}
	return memory.DefaultAllocator.Reallocate(n, b)
}

func (a *boundedAllocator) Free(b []byte) { memory.DefaultAllocator.Free(b) }

func (p *parquetReader) findColumns(sc *schema.Schema) error {
	found := 0
	for i := 0; i < sc.NumColumns(); i++ {
		c := sc.Column(i)
		path := c.ColumnPath()
		leaf := pqLeaf{col: i, maxDef: c.MaxDefinitionLevel(),
			optional: c.SchemaNode().RepetitionType() == parquet.Repetitions.Optional}
		leaf.present = leaf.maxDef
		if leaf.optional {
			leaf.present--
		}
		var idx int
		var want parquet.Type = parquet.Types.ByteArray
		switch {
		case len(path) == 1 && path[0] == "key" && c.MaxRepetitionLevel() == 0:
			idx = pqKey
		case len(path) >= 3 && path[0] == "cells" && c.MaxRepetitionLevel() == 1:
			switch path[len(path)-1] {
			case "family":
				idx = pqFamily
			case "qualifier":
				idx = pqQualifier
			case "timestamp":
				idx, want = pqTimestamp, parquet.Types.Int64
			case "value":
				idx = pqValue
			default:
				continue
			}
		default:
			continue // columns beside the schema's are not read
		}
		if c.PhysicalType() != want {
			return fmt.Errorf("%w: column %s is %s, not %s", ErrParquetSchema, path, c.PhysicalType(), want)
		}
		if found&(1<<idx) != 0 {
			return fmt.Errorf("%w: two columns for %s", ErrParquetSchema, path)
		}
		found |= 1 << idx
		p.leaves[idx] = leaf
	}
	if found != 1<<pqColumns-1 {
		return fmt.Errorf("%w: want key, cells.family, cells.qualifier, cells.timestamp, cells.value (found mask %05b)", ErrParquetSchema, found)
	}
	cellDef := p.leaves[pqFamily].present
	for _, i := range []int{pqQualifier, pqTimestamp, pqValue} {
		if p.leaves[i].present != cellDef {
			return fmt.Errorf("%w: cell fields at different nesting levels", ErrParquetSchema)
		}
	}
	return nil
}

// columnReader is what readColumn uses of the library's typed column
// chunk readers (ByteArrayColumnChunkReader, Int64ColumnChunkReader).
type columnReader[T any] interface {
	HasNext() bool
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	Err() error
}

// readColumn reads column col of row group rg in full: its values and its
// definition and repetition levels, appended to vals, def and rep emptied.
func readColumn[T any](rg *file.RowGroupReader, col int, maxLevels int64, vals []T, def, rep []int16) ([]T, []int16, []int16, error) {
	cr, err := rg.Column(col)
	if err != nil {
		return nil, nil, nil, err
	}
	tr, ok := cr.(columnReader[T])
	if !ok {
		return nil, nil, nil, fmt.Errorf("%w: column %d is of another type", ErrParquetSchema, col)
	}
	const batch = 4096
	vals, def, rep = vals[:0], def[:0], rep[:0]
	for tr.HasNext() {
		n, l := len(vals), len(def)
		vals = slices.Grow(vals, batch)[:n+batch]
		def = slices.Grow(def, batch)[:l+batch]
		rep = slices.Grow(rep, batch)[:l+batch]
		total, nv, err := tr.ReadBatch(batch, vals[n:], def[l:], rep[l:])
		if err != nil {
			return nil, nil, nil, err
		}
		vals, def, rep = vals[:n+nv], def[:l+int(total)], rep[:l+int(total)]
		if total == 0 {
			break
		}
		if int64(len(def)) > maxLevels {
			return nil, nil, nil, fmt.Errorf("more than %d values in a column chunk", maxLevels)
		}
	}
	return vals, def, rep, tr.Err()
}

// load reads row group g's five columns and checks that they agree.
func (p *parquetReader) load(g int) error {
	rg := p.fr.RowGroup(g)
	var err error
	var kdef, d, r []int16
	if p.keys, kdef, _, err = readColumn(rg, p.leaves[pqKey].col, p.maxLevels, p.keys, nil, nil); err != nil {
		return fmt.Errorf("export: parquet row group %d key: %w", g, err)
	}
	if len(kdef) > 0 && len(p.keys) != len(kdef) {
		return fmt.Errorf("export: parquet row group %d: a null key", g)
	}
	if p.fam, p.def, p.rep, err = readColumn(rg, p.leaves[pqFamily].col, p.maxLevels, p.fam, p.def, p.rep); err != nil {
		return fmt.Errorf("export: parquet row group %d family: %w", g, err)
	}
	if !p.sameLevels(pqFamily, p.def, p.rep) {
		return fmt.Errorf("export: parquet row group %d: a null family", g)
	}
	for _, c := range []struct {
		idx  int
		dst  *[]parquet.ByteArray
		name string
	}{{pqQualifier, &p.qual, "qualifier"}, {pqValue, &p.val, "value"}} {
		if *c.dst, d, r, err = readColumn(rg, p.leaves[c.idx].col, p.maxLevels, *c.dst, d, r); err != nil {
			return fmt.Errorf("export: parquet row group %d %s: %w", g, c.name, err)
		}
		if !p.sameLevels(c.idx, d, r) {
			return fmt.Errorf("export: parquet row group %d: %s's levels differ from family's", g, c.name)
		}
	}
	if p.ts, d, r, err = readColumn(rg, p.leaves[pqTimestamp].col, p.maxLevels, p.ts, d, r); err != nil {
		return fmt.Errorf("export: parquet row group %d timestamp: %w", g, err)
	}
	if !p.sameLevels(pqTimestamp, d, r) {
		return fmt.Errorf("export: parquet row group %d: timestamp's levels differ from family's", g)
	}
	rows := 0
	for _, r := range p.rep {
		if r == 0 {
			rows++
		}
	}
	if rows != len(p.keys) || (len(p.rep) > 0 && p.rep[0] != 0) {
		return fmt.Errorf("export: parquet row group %d: %d keys but %d lists of cells", g, len(p.keys), rows)
	}
	p.row, p.level, p.valIdx = 0, 0, 0
	return nil
}

// sameLevels reports whether a cell column's levels match the family
// column's (where a cell exists) and that no field of a cell is null:
// Bigtable has no null, and a null would shift the columns' values apart.
func (p *parquetReader) sameLevels(idx int, def, rep []int16) bool {
	if len(def) != len(p.def) || !slices.Equal(rep, p.rep) {
		return false
	}
	present, maxDef := p.leaves[idx].present, p.leaves[idx].maxDef
	for i, d := range def {
		if (d >= present) != (p.def[i] >= present) || (d >= present && d != maxDef) {
			return false
		}
	}
	return true
}

func (p *parquetReader) ReadRow() (row Row, err error) {
	defer recoverParquet(&err)
	for p.row >= len(p.keys) {
		if p.group >= p.fr.NumRowGroups() {
			return Row{}, io.EOF
		}
		p.group++
		if err := p.load(p.group - 1); err != nil {
			p.keys = p.keys[:0]
			return Row{}, err
		}
	}
	row.Key = p.keys[p.row]
	p.row++
	p.cells = p.cells[:0]
	present := p.leaves[pqFamily].present
	// One row's entries: the first has repetition level 0, the rest 1.
	for first := true; p.level < len(p.def) && (first || p.rep[p.level] != 0); first = false {
		d := p.def[p.level]
		p.level++
		if d < present {
			if !first || (p.level < len(p.def) && p.rep[p.level] != 0) {
				return Row{}, fmt.Errorf("export: parquet row %q: a null cell in a list", row.Key)
			}
			break // an empty or null list: no cells
		}
		i := p.valIdx
		if i >= len(p.fam) || i >= len(p.qual) || i >= len(p.val) || i >= len(p.ts) {
			return Row{}, fmt.Errorf("export: parquet row %q: fewer values than levels", row.Key)
		}
		p.cells = append(p.cells, Cell{Family: string(p.fam[i]), Qualifier: p.qual[i], Timestamp: p.ts[i], Value: p.val[i]})
		p.valIdx++
	}
	row.Cells = p.cells
	return row, nil
}
