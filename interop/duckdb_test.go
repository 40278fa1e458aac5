package interop

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/tabuladb/tabula/export"
)

// rows is a small table of awkward rows: binary keys, qualifiers and
// values, empty qualifiers and values, many versions, a wide row, a row
// with no cells.
func rows(rng *rand.Rand) []export.Row {
	rb := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	out := []export.Row{
		{Key: []byte("\x00\xff key"), Cells: []export.Cell{
			{Family: "cf", Qualifier: []byte{0, 1, 0xff}, Timestamp: 1<<63 - 1, Value: []byte{0xc3, 0x28, 0}},
			{Family: "cf", Qualifier: []byte{}, Timestamp: -5, Value: []byte{}},
		}},
		{Key: []byte("no-cells")},
	}
	versions := export.Row{Key: []byte("versions")}
	for ts := int64(300); ts > 0; ts-- {
		versions.Cells = append(versions.Cells, export.Cell{Family: "v", Qualifier: []byte("c"), Timestamp: ts, Value: rb(rng.IntN(30))})
	}
	wide := export.Row{Key: []byte("wide")}
	for i := range 3000 {
		wide.Cells = append(wide.Cells, export.Cell{Family: fmt.Sprintf("f%d", i%4), Qualifier: rb(1 + rng.IntN(10)), Timestamp: rng.Int64(), Value: rb(rng.IntN(120))})
	}
	out = append(out, versions, wide)
	for i := range 200 {
		r := export.Row{Key: fmt.Appendf(rb(rng.IntN(4)), "-%04d", i)}
		for range rng.IntN(5) {
			r.Cells = append(r.Cells, export.Cell{Family: "d", Qualifier: rb(rng.IntN(6)), Timestamp: rng.Int64N(1 << 52), Value: rb(rng.IntN(200))})
		}
		out = append(out, r)
	}
	return out
}

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func writeParquet(t *testing.T, path string, header []byte, rs []export.Row) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := export.NewParquetWriter(f, export.FileOptions{Header: header})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := w.WriteRow(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DuckDB reads Tabula's Parquet file as the row schema (key BLOB, cells a
// list of structs) and gets every cell, byte for byte, in order; it sees
// the header in the key-value metadata.
func TestDuckDBReadsTabulaParquet(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	want := rows(rand.New(rand.NewPCG(seed, 0)))
	path := filepath.Join(t.TempDir(), "t.parquet")
	writeParquet(t, path, []byte(`{"table":"t"}`), want)
	db := open(t)

	var cols []string
	rs, err := db.Query("DESCRIBE SELECT * FROM read_parquet(" + sqlString(path) + ")")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rs.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, name+" "+typ)
	}
	rs.Close()
	wantCols := `key BLOB|cells STRUCT("family" VARCHAR, qualifier BLOB, "timestamp" BIGINT, "value" BLOB)[]`
	if got := strings.Join(cols, "|"); got != wantCols {
		t.Fatalf("DuckDB sees columns %s, want %s", got, wantCols)
	}

	var header []byte
	if err := db.QueryRow("SELECT value FROM parquet_kv_metadata(" + sqlString(path) + ") WHERE key = 'tabula.header'").Scan(&header); err != nil {
		t.Fatal(err)
	}
	if string(header) != `{"table":"t"}` {
		t.Fatalf("DuckDB sees header %q", header)
	}

	equal(t, duckRows(t, db, path), want)
}

// Tabula reads a Parquet file DuckDB wrote (COPY ... TO, its three-level
// lists, nullable fields) from a query over Tabula's own file: the same
// rows come back.
func TestTabulaReadsDuckDBParquet(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	want := rows(rand.New(rand.NewPCG(seed, 0)))
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.parquet"), filepath.Join(dir, "duck.parquet")
	writeParquet(t, src, nil, want)
	db := open(t)
	if _, err := db.Exec("COPY (SELECT key, cells FROM read_parquet(" + sqlString(src) + ")) TO " + sqlString(dst) + " (FORMAT parquet, COMPRESSION snappy)"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	r, h, err := export.NewParquetReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		t.Fatalf("header %q in DuckDB's file", h)
	}
	var got []export.Row
	for {
		row, err := r.ReadRow()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := export.Row{Key: bytes.Clone(row.Key)}
		for _, cell := range row.Cells {
			c.Cells = append(c.Cells, export.Cell{Family: cell.Family, Qualifier: bytes.Clone(cell.Qualifier), Timestamp: cell.Timestamp, Value: bytes.Clone(cell.Value)})
		}
		got = append(got, c)
	}
	equal(t, got, want)
}

func equal(t *testing.T, got, want []export.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !bytes.Equal(g.Key, w.Key) || len(g.Cells) != len(w.Cells) {
			t.Fatalf("row %d: key %q with %d cells, want %q with %d", i, g.Key, len(g.Cells), w.Key, len(w.Cells))
		}
		for j, wc := range w.Cells {
			gc := g.Cells[j]
			if gc.Family != wc.Family || !bytes.Equal(gc.Qualifier, wc.Qualifier) || gc.Timestamp != wc.Timestamp || !bytes.Equal(gc.Value, wc.Value) {
				t.Fatalf("row %d (%q) cell %d: %+v, want %+v", i, w.Key, j, gc, wc)
			}
		}
	}
}
