package export_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/export"
)

// TestFormatsThroughCluster: for Parquet and Avro, a parallel export
// writes part files of that format, which an import (and a bulk load)
// reads back byte-exact, recognising the format by its first bytes; a
// single file with no manifest recreates the table (--create) from the
// header in its metadata, and so does a file read once from a stream.
func TestFormatsThroughCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	cli := startCluster(ctx, t)

	want := testRows(rng, 300)
	// Rows of 200 KB values after them: an Avro file of several blocks
	// (about 1 MiB each), whose reader reuses its block buffer while an
	// import still holds earlier rows in batches.
	for i := range 30 {
		v := make([]byte, 200<<10)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		want = append(want, export.Row{Key: []byte{0xff, 0xff, byte(i)}, Cells: []export.Cell{{Family: "b", Qualifier: []byte("big"), Timestamp: 7, Value: v}}})
	}
	if err := cli.Admin().CreateTableWithInfo(ctx, client.TableInfo{Name: "src", Families: testFamilies}, [][]byte{{0x55}, {0xaa}}); err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, len(want))
	muts := make([]*client.Mutation, len(want))
	for i, r := range want {
		keys[i], muts[i] = r.Key, client.NewMutation()
		for _, c := range r.Cells {
			muts[i].Set(c.Family, c.Qualifier, c.Timestamp, c.Value)
		}
	}
	if errs, err := cli.Open("src").ApplyBulk(ctx, keys, muts); err != nil {
		t.Fatal(err, errs)
	}

	for _, format := range []export.Format{export.Parquet, export.Avro} {
		t.Run(string(format), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			out, err := export.OpenLocation(ctx, dir, true)
			if err != nil {
				t.Fatal(err)
			}
			m, err := export.Export(ctx, cli, out, export.ExportOptions{Table: "src", Workers: 3, Format: format})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Files) != 3 {
				t.Fatalf("%d files, want 3", len(m.Files))
			}
			for _, f := range m.Files {
				b, err := os.ReadFile(filepath.Join(dir, f.Name))
				if err != nil {
					t.Fatal(err)
				}
				magic := map[export.Format]string{export.Parquet: "PAR1", export.Avro: "Obj\x01"}[format]
				if !strings.HasSuffix(f.Name, "."+string(format)) || !bytes.HasPrefix(b, []byte(magic)) {
					t.Fatalf("file %s starts %q, want a %s file", f.Name, b[:min(4, len(b))], format)
				}
			}

			srcs, header, err := export.LocationSources(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			dst := "dst-" + string(format)
			if _, err := export.Import(ctx, cli, srcs, header, export.ImportOptions{Table: dst, Create: true, Workers: 2, BatchRows: 9}); err != nil {
				t.Fatal(err)
			}
			checkTable(ctx, t, cli, dst, want)
			bulk := "bulk-" + string(format)
			if _, err := export.Import(ctx, cli, srcs, header, export.ImportOptions{Table: bulk, Create: true, Workers: 2, Bulk: true}); err != nil {
				t.Fatal(err)
			}
			checkTable(ctx, t, cli, bulk, want)

			// One file, no manifest: the header comes from its metadata.
			one := "one-" + string(format)
			first := export.FileSource(filepath.Join(dir, m.Files[0].Name))
			if _, err := export.Import(ctx, cli, []export.Source{first}, nil, export.ImportOptions{Table: one, Create: true}); err != nil {
				t.Fatal(err)
			}
			info, err := cli.Admin().DescribeTable(ctx, one)
			if err != nil || len(info.Tablets) != 3 || len(info.Families) != 2 || !info.Families[0].Equal(testFamilies[0]) {
				t.Fatalf("table created from %s's metadata: %+v, %v; want the source's families and 3 tablets", first.Name, info, err)
			}

			// A stream (standard input): the header is known before the
			// import starts, and the rows are all there.
			whole, err := os.ReadFile(filepath.Join(dir, m.Files[1].Name))
			if err != nil {
				t.Fatal(err)
			}
			src, sh, err := export.StreamSource("stdin", bytes.NewReader(whole))
			if err != nil || sh == nil {
				t.Fatalf("stream source: header %q, %v", sh, err)
			}
			stream := "stream-" + string(format)
			st, err := export.Import(ctx, cli, []export.Source{src}, sh, export.ImportOptions{Table: stream, Create: true})
			if err != nil || st.Rows != m.Files[1].Rows || st.Cells != m.Files[1].Cells {
				t.Fatalf("stream import: %+v, %v; want the %d rows and %d cells of %s", st, err, m.Files[1].Rows, m.Files[1].Cells, m.Files[1].Name)
			}
		})
	}
}

func checkTable(ctx context.Context, t *testing.T, cli *client.Client, table string, want []export.Row) {
	t.Helper()
	if got := readAll(ctx, t, cli, table); !reflect.DeepEqual(normalRows(got), normalRows(want)) {
		t.Fatalf("%s holds %d rows that differ from the %d exported", table, len(got), len(want))
	}
}
