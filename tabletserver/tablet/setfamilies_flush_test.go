package tablet

import (
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// TestDroppedFamilyAfterAFailedFlushStaysDropped: a family dropped while a
// memtable frozen by a failed flush waits beside the active one must not
// come back from the commit log when a family of the same name is added
// again and the tablet reopens: the drop flushes both memtables, so the
// replay point passes every record of the dropped family.
func TestDroppedFamilyAfterAFailedFlushStaysDropped(t *testing.T) {
	fsys := vfs.NewFaulty(vfs.Default)
	opts := testOptions(t.TempDir())
	opts.FS = fsys
	tb, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	put := func(row, fam string) {
		t.Helper()
		if err := tb.Apply(bg, []byte(row), []cell.Mutation{set(fam, "q", 1, "v")}); err != nil {
			t.Fatal(err)
		}
	}
	put("r1", "b")
	fsys.Set(failOn(vfs.OpCreate, sst(), vfs.Failf("disk says no")))
	if err := tb.Flush(bg); err == nil {
		t.Fatal("Flush succeeded on a failing disk")
	}
	fsys.Set(nil)
	put("r2", "b") // into the new active memtable
	put("r2", "a")
	if err := tb.SetFamilies(opts.Families[:1]); err != nil {
		t.Fatal(err)
	}
	if err := tb.SetFamilies(append(opts.Families[:1:1], families.Family{Name: "b"})); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Create = false
	opts.Families = append(opts.Families[:1:1], families.Family{Name: "b"})
	tb = openTablet(t, opts)
	for _, row := range []string{"r1", "r2"} {
		cells, err := tb.ReadRow(bg, []byte(row), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cells {
			if c.Family == "b" {
				t.Fatalf("row %s: cell %s:%s of the dropped family came back", row, c.Family, c.Qualifier)
			}
		}
	}
	if cells, err := tb.ReadRow(bg, []byte("r2"), nil); err != nil || len(cells) != 1 {
		t.Fatalf("row r2 of family a: %v, %v; want its one cell", cells, err)
	}
}
