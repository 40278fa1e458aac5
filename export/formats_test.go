package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

// format is one of the Parquet and Avro formats under test, through the
// constructors the CLI uses.
type format struct {
	name  string
	write func(w io.Writer, o FileOptions) (RowWriter, error)
	read  func(b []byte) (RowReader, []byte, error)
}

// jsonLines is this package's JSON-lines format as a format.
var jsonLines = format{"jsonl", func(w io.Writer, o FileOptions) (RowWriter, error) {
	return NewJSONLinesWriter(w, o)
}, func(b []byte) (RowReader, []byte, error) {
	jr, err := NewJSONLinesReader(bytes.NewReader(b), "test")
	if err != nil {
		return nil, nil, err
	}
	return jr, jr.Header(), nil
}}

var formats = []format{
	{"parquet", NewParquetWriter, func(b []byte) (RowReader, []byte, error) {
		return NewParquetReader(bytes.NewReader(b), int64(len(b)))
	}},
	{"avro", NewAvroWriter, func(b []byte) (RowReader, []byte, error) {
		return NewAvroReader(bytes.NewReader(b))
	}},
}

// writeFile writes rows with f and returns the file.
func writeFile(t testing.TB, f format, header []byte, rows []Row) []byte {
	t.Helper()
	var buf bytes.Buffer
	writeFileTo(t, f, &buf, header, rows)
	return buf.Bytes()
}

// writeFileTo writes rows with f to out.
func writeFileTo(t testing.TB, f format, out io.Writer, header []byte, rows []Row) {
	t.Helper()
	w, err := f.write(out, FileOptions{Header: header})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every row of a file, copying each (a reader's rows are
// valid until its next call).
func readAll(t testing.TB, r RowReader) []Row {
	t.Helper()
	var rows []Row
	for {
		row, err := r.ReadRow()
		if err == io.EOF {
			return rows
		}
		if err != nil {
			t.Fatalf("after %d rows: %v", len(rows), err)
		}
		rows = append(rows, cloneRow(row))
	}
}

func cloneRow(r Row) Row {
	c := Row{Key: bytes.Clone(r.Key), Cells: make([]Cell, len(r.Cells))}
	for i, cell := range r.Cells {
		c.Cells[i] = Cell{Family: cell.Family, Qualifier: bytes.Clone(cell.Qualifier), Timestamp: cell.Timestamp, Value: bytes.Clone(cell.Value)}
	}
	return c
}

// equalRows compares byte for byte; nil and empty slices are the same
// (no format tells them apart, nor does Bigtable).
func equalRows(t testing.TB, got, want []Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Key, w.Key) || len(g.Cells) != len(w.Cells) {
			t.Fatalf("row %d: got key %q with %d cells, want %q with %d", i, g.Key, len(g.Cells), w.Key, len(w.Cells))
		}
		for j := range w.Cells {
			gc, wc := g.Cells[j], w.Cells[j]
			if gc.Family != wc.Family || !bytes.Equal(gc.Qualifier, wc.Qualifier) || gc.Timestamp != wc.Timestamp || !bytes.Equal(gc.Value, wc.Value) {
				t.Fatalf("row %d (%q) cell %d: got %+v, want %+v", i, w.Key, j, gc, wc)
			}
		}
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// testRows is a table's worth of awkward rows: binary keys, qualifiers and
// values (every byte value, NULs, invalid UTF-8), empty qualifiers and
// values, many versions of one column, negative and extreme timestamps, a
// row of thousands of cells, and a row with no cells (the schema allows
// an empty list; Tabula never exports one, other tools may).
func testRows(rng *rand.Rand) []Row {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	rows := []Row{
		{Key: []byte{0}, Cells: []Cell{{Family: "f", Qualifier: nil, Timestamp: 0, Value: nil}}},
		{Key: []byte("\x00\xff\xfe binary"), Cells: []Cell{
			{Family: "cf", Qualifier: all, Timestamp: 1<<63 - 1, Value: all},
			{Family: "cf", Qualifier: []byte{}, Timestamp: -1, Value: []byte{}},
			{Family: "ünï", Qualifier: []byte("q\x00"), Timestamp: -1 << 63, Value: []byte("\xc3\x28")},
		}},
		{Key: []byte("empty-row")},
	}
	versions := Row{Key: []byte("versions")}
	for ts := int64(1000); ts > 0; ts-- {
		versions.Cells = append(versions.Cells, Cell{Family: "v", Qualifier: []byte("col"), Timestamp: ts * 1000, Value: randBytes(rng, rng.IntN(20))})
	}
	rows = append(rows, versions)
	wide := Row{Key: []byte("wide")}
	for i := range 5000 {
		wide.Cells = append(wide.Cells, Cell{Family: fmt.Sprintf("f%d", i%3), Qualifier: randBytes(rng, 1+rng.IntN(16)), Timestamp: rng.Int64(), Value: randBytes(rng, rng.IntN(200))})
	}
	rows = append(rows, wide)
	for i := range 300 {
		r := Row{Key: append([]byte(fmt.Sprintf("r%05d", i)), randBytes(rng, rng.IntN(8))...)}
		for range rng.IntN(6) {
			r.Cells = append(r.Cells, Cell{Family: "d", Qualifier: randBytes(rng, rng.IntN(8)), Timestamp: rng.Int64N(1 << 52), Value: randBytes(rng, rng.IntN(300))})
		}
		rows = append(rows, r)
	}
	return rows
}

func TestFormatsRoundTrip(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rows := testRows(rand.New(rand.NewPCG(seed, 0)))
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			// Avro metadata holds bytes; Parquet's holds UTF-8 text.
			header := []byte("{\"schema\": \"ünï\\u0000\"}\n")
			if f.name == "avro" {
				header = append(header, 0, 0xff)
			}
			file := writeFile(t, f, header, rows)
			r, h, err := f.read(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(h, header) {
				t.Fatalf("header %q, want %q", h, header)
			}
			equalRows(t, readAll(t, r), rows)
		})
	}
}

// A file without a header reads back a nil one, as a file made by the
// Dataflow templates does; an empty file (no rows) is valid.
func TestFormatsNoHeaderNoRows(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			file := writeFile(t, f, nil, nil)
			r, h, err := f.read(file)
			if err != nil {
				t.Fatal(err)
			}
			if h != nil {
				t.Fatalf("header %q, want nil", h)
			}
			if _, err := r.ReadRow(); err != io.EOF {
				t.Fatalf("ReadRow on an empty file: %v, want io.EOF", err)
			}
		})
	}
}

// closeRecorder is an io.WriteCloser that records a Close.
type closeRecorder struct {
	bytes.Buffer
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// A writer's Close finishes the file but leaves the io.Writer open (a
// caller may write several files to one stream, or close it itself).
func TestFormatsLeaveWriterOpen(t *testing.T) {
	for _, f := range formats {
		var c closeRecorder
		w, err := f.write(&c, FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRow(Row{Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if c.closed {
			t.Errorf("%s: Close closed the io.Writer", f.name)
		}
	}
}

func TestParquetRefusesBinaryHeader(t *testing.T) {
	if _, err := NewParquetWriter(io.Discard, FileOptions{Header: []byte{0xff}}); err == nil {
		t.Fatal("a header that is not UTF-8 accepted (Parquet metadata is text)")
	}
}

// Rows beyond one row group / block: the writers cut them (and Parquet's
// columns into pages) and the readers go on across the cut, the cells of
// each row kept together; one value is larger than a row group's bound.
func TestFormatsManyGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("writes over 64 MiB")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	value := randBytes(rng, 64<<10)
	var rows []Row
	for i := range parquetRowGroupBytes/(len(value)*3) + 50 {
		r := Row{Key: fmt.Appendf(nil, "row%06d", i)}
		for j := range 3 {
			r.Cells = append(r.Cells, Cell{Family: "f", Qualifier: []byte{byte(j)}, Timestamp: int64(i), Value: value[j:]})
		}
		rows = append(rows, r)
	}
	// A value larger than a row group's bound and than the Parquet
	// library's default page limit (64 MiB), incompressible: Bigtable
	// allows 100 MiB.
	rows = append(rows, Row{Key: []byte("row~big"), Cells: []Cell{{Family: "f", Timestamp: 1, Value: randBytes(rng, 65<<20)}}})
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			file := writeFile(t, f, nil, rows)
			r, _, err := f.read(file)
			if err != nil {
				t.Fatal(err)
			}
			equalRows(t, readAll(t, r), rows)
		})
	}
}

// Files that are not in the row schema, or not files of the format, are
// refused with an error when opened or read, never a panic.
func TestFormatsRejectOthers(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			for _, b := range [][]byte{nil, []byte("PAR1"), []byte("Obj\x01"), []byte("not a file at all")} {
				if r, _, err := f.read(b); err == nil {
					if _, err := r.ReadRow(); err == nil || err == io.EOF {
						t.Errorf("%q read as a %s file", b, f.name)
					}
				}
			}
		})
	}
	_, _, err := NewAvroReader(bytes.NewReader(hambaFile(t, `{"type":"record","name":"R","fields":[{"name":"key","type":"string"}]}`, nil)))
	if !errors.Is(err, ErrAvroSchema) {
		t.Errorf("an Avro file of another schema: %v, want ErrAvroSchema", err)
	}
}
