package export_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/export"
	"github.com/tabuladb/tabula/families"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startCluster starts an in-process dev cluster of one tablet server and
// a client of it.
func startCluster(ctx context.Context, t *testing.T) *client.Client {
	t.Helper()
	c, err := devcluster.Start(ctx, devcluster.Config{Dir: t.TempDir(), Servers: 1, LeaseTTL: 5 * time.Second, NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cli, err := client.NewClient(ctx, c.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// testRows makes n rows of random binary keys, each with several columns
// and versions (explicit timestamps), sorted by key, cells in read order.
func testRows(rng *rand.Rand, n int) []export.Row {
	seen := map[string]bool{}
	var rows []export.Row
	for len(rows) < n {
		key := make([]byte, 1+rng.IntN(12))
		for i := range key {
			key[i] = byte(rng.IntN(256))
		}
		if seen[string(key)] {
			continue
		}
		seen[string(key)] = true
		r := export.Row{Key: key}
		for _, fam := range []string{"a", "b"} {
			for q := range rng.IntN(3) + 1 {
				qual := []byte{byte(q), 0xff, byte(rng.IntN(256))}
				for v := range rng.IntN(3) + 1 {
					val := make([]byte, rng.IntN(40))
					for i := range val {
						val[i] = byte(rng.IntN(256))
					}
					r.Cells = append(r.Cells, export.Cell{Family: fam, Qualifier: qual, Timestamp: int64(1000 - v), Value: val})
				}
			}
		}
		sortCells(r.Cells)
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return bytes.Compare(rows[i].Key, rows[j].Key) < 0 })
	return rows
}

// sortCells puts cells in read order and drops repeated columns' versions.
func sortCells(cs []export.Cell) {
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].Family != cs[j].Family {
			return cs[i].Family < cs[j].Family
		}
		if c := bytes.Compare(cs[i].Qualifier, cs[j].Qualifier); c != 0 {
			return c < 0
		}
		return cs[i].Timestamp > cs[j].Timestamp
	})
}

var testFamilies = []families.Family{
	{Name: "a", GCRule: families.UnionRule(families.MaxVersionsRule(5), families.IntersectionRule(families.MaxAgeRule(7*24*time.Hour), families.MaxVersionsRule(4))),
		Compression: families.CompressionZstd, Bloom: families.BloomRowColumn, BlockSize: 16 << 10, InMemory: true},
	{Name: "b", MaxVersions: 10, Compression: families.CompressionSnappy, Bloom: families.BloomRow},
}

// readAll reads every row of a table, every version.
func readAll(ctx context.Context, t *testing.T, cli *client.Client, table string) []export.Row {
	t.Helper()
	var rows []export.Row
	it := cli.Open(table).ReadRows(ctx, client.NewRange(nil, nil))
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

func normalRows(rows []export.Row) []export.Row {
	out := make([]export.Row, len(rows))
	for i, r := range rows {
		out[i].Key = append([]byte{}, r.Key...)
		for _, c := range r.Cells {
			out[i].Cells = append(out[i].Cells, export.Cell{Family: c.Family, Qualifier: append([]byte{}, c.Qualifier...), Timestamp: c.Timestamp, Value: append([]byte{}, c.Value...)})
		}
	}
	return out
}

// TestImportKilledAndRerun: an import of a directory of files, cancelled
// after K files (as a kill would stop it), then rerun, skips the files its
// state file records and leaves the table byte-exact as the files hold
// it, with the schema of the header (--create). Then a parallel export of
// that table gives the same rows back, file by file in key order.
func TestImportKilledAndRerun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	cli := startCluster(ctx, t)

	const files, perFile = 8, 60
	want := testRows(rng, files*perFile)
	h := export.Header{Table: "src", AsOf: 5000, Families: testFamilies, Splits: [][]byte{{0x40}, {0x80}, {0xc0}}}
	hb, err := export.EncodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	loc, err := export.OpenLocation(ctx, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		f, err := loc.Create(ctx, export.FileName(i, export.JSONLines))
		if err != nil {
			t.Fatal(err)
		}
		w, err := export.NewJSONLinesWriter(f, export.FileOptions{Header: hb})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range want[i*perFile : (i+1)*perFile] {
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
	srcs, header, err := export.LocationSources(ctx, loc)
	if err != nil || len(srcs) != files || header != nil {
		t.Fatalf("sources %d, header %s, %v", len(srcs), header, err)
	}

	// Without Create, a missing table fails before any file is read.
	state := filepath.Join(dir, "import.state")
	_, err = export.Import(ctx, cli, srcs, nil, export.ImportOptions{Table: "dst", State: state})
	if !errors.Is(err, export.ErrNoTable) {
		t.Fatalf("import into a missing table: %v, want ErrNoTable", err)
	}

	const k = 3
	killed, kill := context.WithCancel(ctx)
	var finished atomic.Int64
	st, err := export.Import(killed, cli, srcs, nil, export.ImportOptions{Table: "dst", Create: true, Workers: 2, BatchRows: 7, State: state,
		FileDone: func(string) {
			if finished.Add(1) == k {
				kill()
			}
		}})
	kill()
	if !errors.Is(err, context.Canceled) || !st.Created {
		t.Fatalf("killed import: %+v, %v; want context.Canceled after creating the table", st, err)
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	recorded := bytes.Count(b, []byte("\n"))
	if recorded < k || recorded >= files {
		t.Fatalf("state records %d files, want %d to %d:\n%s", recorded, k, files-1, b)
	}

	st, err = export.Import(ctx, cli, srcs, nil, export.ImportOptions{Table: "dst", Create: true, Workers: 4, State: state})
	if err != nil || st.Skipped != recorded || st.Files != files-recorded || st.Created {
		t.Fatalf("rerun: %+v, %v; want %d skipped, %d imported", st, err, recorded, files-recorded)
	}
	if got := readAll(ctx, t, cli, "dst"); !reflect.DeepEqual(normalRows(got), normalRows(want)) {
		t.Fatalf("table after the rerun differs: %d rows, want %d", len(got), len(want))
	}
	info, err := cli.Admin().DescribeTable(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range info.Families {
		if !f.Equal(testFamilies[i]) {
			t.Errorf("family %+v, want %+v", f, testFamilies[i])
		}
	}
	if len(info.Tablets) != 4 {
		t.Errorf("%d tablets, want 4 (the header's 3 splits)", len(info.Tablets))
	}

	// A parallel export of the table: its files, in order, hold the rows.
	out, err := export.OpenLocation(ctx, filepath.Join(t.TempDir(), "out"), true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := export.Export(ctx, cli, out, export.ExportOptions{Table: "dst", Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []export.Row
	var cells int64
	for _, f := range m.Files {
		r, err := out.Open(ctx, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		jr, err := export.NewJSONLinesReader(r, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			row, err := jr.ReadRow()
			if err != nil {
				break
			}
			got = append(got, row)
		}
		r.Close()
		cells += f.Cells
	}
	if len(m.Files) != 3 || !reflect.DeepEqual(normalRows(got), normalRows(want)) {
		t.Errorf("parallel export: %d files, %d rows; want 3 files, the %d rows", len(m.Files), len(got), len(want))
	}
	var wantCells int64
	for _, r := range want {
		wantCells += int64(len(r.Cells))
	}
	if cells != wantCells {
		t.Errorf("manifest counts %d cells, want %d", cells, wantCells)
	}
}

// TestImportAggregateFamilies: an aggregate family's exported value (its
// merged state) imports by merging into the cell at its timestamp, so the
// copy reads the same; importing again keeps a max and adds a sum again
// (docs/OPERATIONS.md "Exports and imports").
func TestImportAggregateFamilies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := startCluster(ctx, t)
	fams := []families.Family{{Name: "hi", ValueType: families.Max}, {Name: "n", ValueType: families.Sum}, {Name: "raw", MaxVersions: 2}}
	if err := cli.Admin().CreateTable(ctx, "agg", fams, nil); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("agg")
	for i, d := range []int64{5, 7, -2} {
		m := client.NewMutation().AddToCell("n", []byte("q"), 100, d).AddToCell("hi", []byte("q"), 100, d*10).Set("raw", []byte("q"), int64(i+1), []byte{byte(i)})
		if err := tbl.Apply(ctx, []byte("row"), m); err != nil {
			t.Fatal(err)
		}
	}
	want := readAll(ctx, t, cli, "agg")
	h, err := export.ReadHeader(ctx, cli, "agg", export.AsOfNow(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := export.EncodeHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	w, err := export.NewJSONLinesWriter(&file, export.FileOptions{Header: hb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.WriteRange(ctx, tbl, nil, nil, export.Cut(h.AsOf, nil), w, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	importOnce := func() {
		t.Helper()
		src, header, err := export.StreamSource("file", bytes.NewReader(file.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := export.Import(ctx, cli, []export.Source{src}, header, export.ImportOptions{Table: "copy", Create: true}); err != nil {
			t.Fatal(err)
		}
	}
	importOnce()
	if got := readAll(ctx, t, cli, "copy"); !reflect.DeepEqual(normalRows(got), normalRows(want)) {
		t.Fatalf("copy reads %+v, want %+v", got, want)
	}
	importOnce()
	got := readAll(ctx, t, cli, "copy")
	sums := map[string]int64{}
	for _, c := range got[0].Cells {
		if n, ok := families.DecodeAggregate(c.Value); ok && c.Family != "raw" {
			sums[c.Family] = n
		}
	}
	if sums["hi"] != 70 || sums["n"] != 20 {
		t.Errorf("after a second import: max %d (want 70), sum %d (want 20: added again)", sums["hi"], sums["n"])
	}
}
