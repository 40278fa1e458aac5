package tablet

import (
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// TestApplyOfOneCellDoesNotAllocate: in steady state a write of one cell
// allocates nothing on the commit path (pooled record buffer, key encoded
// into the memtable's arena); only a new arena chunk now and then, which
// AllocsPerRun's whole-number average leaves out.
func TestApplyOfOneCellDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocations")
	}
	tb := openTablet(t, testOptions(t.TempDir()))
	rows := make([][]byte, 2000)
	for i := range rows {
		rows[i] = engineKey(i * 7919 % len(rows))
	}
	muts := []cell.Mutation{{Kind: cell.SetCell, Family: "a", Timestamp: 1, Value: make([]byte, 100)}}
	i := 0
	if n := testing.AllocsPerRun(len(rows)-1, func() {
		if err := tb.Apply(bg, rows[i], muts); err != nil {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Fatalf("Apply of one cell allocates %v times", n)
	}
}
