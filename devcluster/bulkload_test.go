package devcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// TestBulkLoadAcrossTablets loads rows that span three tablets through the
// tablet servers' BulkLoad service: every row reads back, each tablet's
// share went in one call, a loaded cell replaces an older one of the same
// column and timestamp and a later write replaces it, and a share with a
// bad row fails naming the problem while leaving none of its rows.
func TestBulkLoadAcrossTablets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Dir: t.TempDir(), Servers: 2, LeaseTTL: 2 * time.Second, NoFsync: true, Auth: secureAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cli, err := newClient(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	fams := []families.Family{families.Default("cf"), families.Default("meta")}
	if err := cli.Admin().CreateTable(ctx, "bulk", fams, [][]byte{[]byte("g"), []byte("n")}); err != nil {
		t.Fatal(err)
	}
	tbl := cli.Open("bulk")
	for _, row := range []string{"a", "h", "z"} {
		readRow(ctx, t, tbl, row) // every tablet serving
	}
	if err := tbl.Apply(ctx, []byte("h005"), client.NewMutation().Set("cf", []byte("q"), 1000, []byte("old"))); err != nil {
		t.Fatal(err)
	}

	var rows []client.Row
	for _, p := range "abhmnxz" {
		for i := range 10 {
			key := fmt.Sprintf("%c%03d", p, i)
			rows = append(rows, client.Row{Key: []byte(key), Cells: []cell.Cell{
				{Family: "cf", Qualifier: []byte("q"), Timestamp: 1000, Value: []byte("bulk-" + key)},
				{Family: "meta", Qualifier: []byte("src"), Timestamp: 1000, Value: []byte("load")},
			}})
		}
	}
	st, err := tbl.BulkLoad(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 70 || st.Cells != 140 || st.Calls != 3 || st.Files != 6 {
		t.Errorf("stats %+v, want 70 rows, 140 cells, 3 calls (one per tablet), 6 files", st)
	}
	it := tbl.ReadRows(ctx, client.InfiniteRange(nil))
	n := 0
	for it.Next() {
		r := it.Row()
		if len(r.Cells) != 2 || string(r.Cells[0].Value) != "bulk-"+string(r.Key) {
			t.Errorf("row %s = %+v", r.Key, r.Cells)
		}
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 70 {
		t.Errorf("scanned %d rows, want 70", n)
	}
	if err := tbl.Apply(ctx, []byte("h005"), client.NewMutation().Set("cf", []byte("q"), 1000, []byte("after"))); err != nil {
		t.Fatal(err)
	}
	if r := readRow(ctx, t, tbl, "h005"); string(r.Cells[0].Value) != "after" {
		t.Errorf("a write after the load: h005 = %q, want after", r.Cells[0].Value)
	}

	// A share with a cell of a family the table lacks fails whole.
	bad := []client.Row{
		{Key: []byte("o001"), Cells: []cell.Cell{{Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}}},
		{Key: []byte("o002"), Cells: []cell.Cell{{Family: "nope", Qualifier: []byte("q"), Timestamp: 1, Value: []byte("v")}}},
	}
	if _, err := tbl.BulkLoad(ctx, bad); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("BulkLoad with an unknown family: %v, want an error naming it", err)
	}
	if r := readRow(ctx, t, tbl, "o001"); len(r.Cells) != 0 {
		t.Errorf("o001 = %+v after its share failed, want nothing", r.Cells)
	}
	if _, err := tbl.BulkLoad(ctx, []client.Row{{Key: []byte("b"), Cells: bad[0].Cells}, {Key: []byte("a")}}); err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Errorf("BulkLoad of unsorted rows: %v", err)
	}
}
