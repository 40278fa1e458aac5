package interop

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/export"
	"github.com/tabuladb/tabula/families"
)

// cli is the tabula binary built from this tree and a `tabula dev`
// cluster of one tablet server run by it.
type cli struct {
	bin, master string
}

// startCLI builds cmd/tabula and starts `tabula dev`, stopped (SIGTERM,
// waited for) when the test ends.
func startCLI(ctx context.Context, t *testing.T) *cli {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "tabula")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tabula")
	build.Dir = ".." // the root module (the replace in go.mod)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tabula: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "dev")
	log, err := os.Create(filepath.Join(dir, "dev.log"))
	if err != nil {
		t.Fatal(err)
	}
	dev := exec.Command(bin, "dev", "--servers", "1", "--data", data, "--master-addr", "127.0.0.1:0",
		"--gateway", "", "--http", "", "--log-level", "warn")
	dev.Stdout, dev.Stderr = log, log
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- dev.Wait() }()
	t.Cleanup(func() {
		dev.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			b, _ := os.ReadFile(log.Name())
			t.Errorf("tabula dev: %v\n%s", err, b)
		}
		log.Close()
	})
	// dev writes DATA/master.addr once it serves.
	for {
		if b, err := os.ReadFile(filepath.Join(data, "master.addr")); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return &cli{bin: bin, master: string(bytes.TrimSpace(b))}
		}
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("tabula dev exited: %v\n%s", err, b)
		case <-ctx.Done():
			t.Fatal("tabula dev wrote no master.addr")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// run runs tabula with args against the dev cluster; it returns stderr
// and fails the test on a non-zero exit unless fail is set.
func (c *cli) run(ctx context.Context, t *testing.T, fail bool, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), "TABULA_MASTER="+c.master)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if (err != nil) != fail {
		t.Fatalf("tabula %s: %v (want failure: %v)\n%s", strings.Join(args, " "), err, fail, stderr.String())
	}
	return stderr.String()
}

// tableRows reads every row of a table, every version, as export rows.
func tableRows(ctx context.Context, t *testing.T, cl *client.Client, table string) []export.Row {
	t.Helper()
	var rows []export.Row
	it := cl.Open(table).ReadRows(ctx, client.NewRange(nil, nil))
	defer it.Close()
	for it.Next() {
		r := export.Row{Key: it.Row().Key}
		for _, c := range it.Row().Cells {
			r.Cells = append(r.Cells, export.Cell{Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
		}
		rows = append(rows, r)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// duckRows reads a Parquet file in the row schema with DuckDB, one line
// per cell in file order (DuckDB keeps a single file's order; a row with
// no cells gives one line of NULLs), into rows.
func duckRows(t *testing.T, db *sql.DB, path string) []export.Row {
	t.Helper()
	rs, err := db.Query(`SELECT key, c.family, c.qualifier, c."timestamp", c."value"
	      FROM (SELECT file_row_number AS n, key, unnest(CASE WHEN len(cells) = 0 THEN [NULL] ELSE cells END) AS c
	            FROM read_parquet(` + sqlString(path) + `, file_row_number = true)) ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var got []export.Row
	for rs.Next() {
		var key, qual, val []byte
		var fam sql.NullString
		var ts sql.NullInt64
		if err := rs.Scan(&key, &fam, &qual, &ts, &val); err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || !bytes.Equal(got[len(got)-1].Key, key) {
			got = append(got, export.Row{Key: key})
		}
		if fam.Valid {
			r := &got[len(got)-1]
			r.Cells = append(r.Cells, export.Cell{Family: fam.String, Qualifier: qual, Timestamp: ts.Int64, Value: val})
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// A table exported to Parquet by `tabula export` is read by DuckDB cell
// for cell, header included; a Parquet file DuckDB writes from a query
// is imported by `tabula import` into the cells it holds.
func TestCLIParquetWithDuckDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startCLI(ctx, t)
	cl, err := client.NewClient(ctx, c.master)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fams := []families.Family{{Name: "cf", MaxVersions: 10}, {Name: "d", MaxVersions: 10}}
	if err := cl.Admin().CreateTableWithInfo(ctx, client.TableInfo{Name: "src", Families: fams}, [][]byte{{0x80}}); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	var muts []*client.Mutation
	for i := range 500 {
		key := fmt.Appendf([]byte{byte(rng.Uint32())}, "\xff%04d", i)
		m := client.NewMutation()
		for j := range 1 + rng.IntN(6) {
			v := make([]byte, rng.IntN(300))
			for k := range v {
				v[k] = byte(rng.Uint32())
			}
			m.Set([]string{"cf", "d"}[j%2], []byte{byte(j), 0, 0xfe}, int64(1_000_000+rng.IntN(3)), v)
		}
		keys, muts = append(keys, key), append(muts, m)
	}
	if errs, err := cl.Open("src").ApplyBulk(ctx, keys, muts); err != nil {
		t.Fatal(err, errs)
	}
	want := tableRows(ctx, t, cl, "src")

	dir := t.TempDir()
	pq := filepath.Join(dir, "src.parquet")
	c.run(ctx, t, false, "export", "src", "--file", pq)
	db := open(t)
	equal(t, duckRows(t, db, pq), want)
	var header []byte
	if err := db.QueryRow("SELECT value FROM parquet_kv_metadata(" + sqlString(pq) + ") WHERE key = 'tabula.header'").Scan(&header); err != nil {
		t.Fatal(err)
	}
	if h, err := export.DecodeHeader(header); err != nil || h.Table != "src" || len(h.Splits) != 1 || len(h.Families) != 2 {
		t.Fatalf("DuckDB sees header %s: %+v, %v", header, h, err)
	}

	// DuckDB's own file (three-level lists, nullable fields, no header)
	// of the rows of family d with a key >= 0x80.
	duck := filepath.Join(dir, "duck.parquet")
	if _, err := db.Exec(`COPY (SELECT key, list_filter(cells, c -> c.family = 'd') AS cells FROM read_parquet(` + sqlString(pq) + `)
	      WHERE key >= '\x80'::BLOB AND len(list_filter(cells, c -> c.family = 'd')) > 0 ORDER BY key)
	      TO ` + sqlString(duck) + ` (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	var wantDuck []export.Row
	for _, r := range want {
		if r.Key[0] < 0x80 {
			continue
		}
		var cells []export.Cell
		for _, c := range r.Cells {
			if c.Family == "d" {
				cells = append(cells, c)
			}
		}
		if len(cells) > 0 {
			wantDuck = append(wantDuck, export.Row{Key: r.Key, Cells: cells})
		}
	}
	if len(wantDuck) == 0 {
		t.Fatal("no rows for DuckDB to write")
	}
	if stderr := c.run(ctx, t, true, "import", "dst", "--file", duck, "--create"); !strings.Contains(stderr, "no header") {
		t.Fatalf("import --create of a file without a header: %s", stderr)
	}
	if err := cl.Admin().CreateTableWithInfo(ctx, client.TableInfo{Name: "dst", Families: fams}, nil); err != nil {
		t.Fatal(err)
	}
	if stderr := c.run(ctx, t, false, "import", "dst", "--file", duck); !strings.Contains(stderr, fmt.Sprintf("imported %d rows", len(wantDuck))) {
		t.Fatalf("import of DuckDB's file: %s", stderr)
	}
	equal(t, tableRows(ctx, t, cl, "dst"), wantDuck)
}
