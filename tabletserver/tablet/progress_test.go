package tablet

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/rowfilter"
)

// TestScanReportsProgressOnRowsItDrops: ReadOptions.Progress is called
// every few rows the scan passes, including rows the filter drops, in
// memtables and SSTables and across the spans of a row set, so a scan
// that returns nothing for a long time still shows it is working.
func TestScanReportsProgressOnRowsItDrops(t *testing.T) {
	const rows = 320
	tb := openTablet(t, testOptions(t.TempDir()))
	for i := range rows {
		apply(t, tb, fmt.Sprintf("r%04d", i), set("a", "q", 1, "v"))
		if i == rows/2 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name string
		opts ReadOptions
		want int // calls at least
	}{
		{"whole tablet, every row dropped", ReadOptions{Filter: rowfilter.ValueRegex("nothing")}, rows / 16},
		{"whole tablet, every row returned", ReadOptions{}, rows / 16},
		{"two ranges, every row dropped", ReadOptions{Filter: rowfilter.ValueRegex("nothing"), Ranges: []RowRange{
			{Start: []byte("r0000"), End: []byte("r0100")}, {Start: []byte("r0200"), End: []byte("r0300")},
		}}, 200 / 16},
	}
	for _, c := range cases {
		calls := 0
		c.opts.Progress = func() { calls++ }
		it, err := tb.NewRowIterator(bg, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
		}
		if err := it.Close(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if calls < c.want {
			t.Errorf("%s: Progress called %d times, want at least %d", c.name, calls, c.want)
		}
	}
}
