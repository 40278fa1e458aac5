package tablet

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/wal"
)

var bg = context.Background()

// fakeClock is an injectable clock in microseconds.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) Now() int64 { return c.now.Load() }

func testOptions(dir string) Options {
	return Options{
		Dir: dir, Create: true,
		Families: []families.Family{
			{Name: "a"},
			{Name: "b", Bloom: families.BloomRow, Compression: families.CompressionSnappy},
		},
		SyncMode:              wal.SyncNone,
		DisableBackgroundWork: true,
	}
}

func openTablet(t testing.TB, opts Options) *Tablet {
	t.Helper()
	tb, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = tb.Close() })
	return tb
}

func set(fam, q string, ts int64, v string) cell.Mutation {
	return cell.Mutation{Kind: cell.SetCell, Family: fam, Qualifier: []byte(q), Timestamp: ts, Value: []byte(v)}
}

func delCol(fam, q string, start, end int64) cell.Mutation {
	return cell.Mutation{Kind: cell.DeleteColumn, Family: fam, Qualifier: []byte(q), TimeStart: start, TimeEnd: end}
}

func delFam(fam string) cell.Mutation { return cell.Mutation{Kind: cell.DeleteFamily, Family: fam} }

func delRow() cell.Mutation { return cell.Mutation{Kind: cell.DeleteRow} }

func apply(t testing.TB, tb *Tablet, row string, muts ...cell.Mutation) {
	t.Helper()
	if err := tb.Apply(bg, []byte(row), muts); err != nil {
		t.Fatalf("Apply(%q): %v", row, err)
	}
}

// render prints cells as "fam:q@ts=v" (then "#label" for each label)
// joined by spaces.
func render(cells []cell.Cell) string {
	var parts []string
	for _, c := range cells {
		p := fmt.Sprintf("%s:%s@%d=%s", c.Family, c.Qualifier, c.Timestamp, c.Value)
		for _, l := range c.Labels {
			p += "#" + l
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func readRow(t testing.TB, tb *Tablet, row string, f *rowfilter.Filter) string {
	t.Helper()
	cells, err := tb.ReadRow(bg, []byte(row), f)
	if err != nil {
		t.Fatalf("ReadRow(%q): %v", row, err)
	}
	return render(cells)
}

// scan renders every row of the tablet: "row{cells} row{cells}".
func scan(t testing.TB, tb *Tablet, opts ReadOptions) string {
	t.Helper()
	it, err := tb.NewRowIterator(bg, opts)
	if err != nil {
		t.Fatalf("NewRowIterator: %v", err)
	}
	var parts []string
	for it.Next() {
		parts = append(parts, fmt.Sprintf("%s{%s}", it.Row(), render(it.Cells())))
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return strings.Join(parts, " ")
}
