package tablet

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/wal"
)

func benchTablet(b *testing.B, mode wal.SyncMode) *Tablet {
	opts := testOptions(b.TempDir())
	opts.SyncMode = mode
	opts.DisableBackgroundWork = false
	return openTablet(b, opts)
}

func BenchmarkApply(b *testing.B) {
	tb := benchTablet(b, wal.SyncNone)
	val := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		row := []byte(fmt.Sprintf("row%09d", i))
		if err := tb.Apply(bg, row, []cell.Mutation{{Kind: cell.SetCell, Family: "a", Qualifier: []byte("q"), Timestamp: 1, Value: val}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyParallelSync(b *testing.B) {
	tb := benchTablet(b, wal.SyncAlways)
	val := make([]byte, 100)
	var n atomic.Int64
	// RunParallel starts SetParallelism(p) * GOMAXPROCS goroutines: about 64.
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			row := []byte(fmt.Sprintf("row%09d", n.Add(1)))
			if err := tb.Apply(bg, row, []cell.Mutation{{Kind: cell.SetCell, Family: "a", Qualifier: []byte("q"), Timestamp: 1, Value: val}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func loadRows(b *testing.B, tb *Tablet, n int) {
	val := make([]byte, 100)
	for i := 0; i < n; i++ {
		row := []byte(fmt.Sprintf("row%09d", i))
		if err := tb.Apply(bg, row, []cell.Mutation{{Kind: cell.SetCell, Family: "b", Qualifier: []byte("q"), Timestamp: 1, Value: val}}); err != nil {
			b.Fatal(err)
		}
		if i%(n/4) == n/4-1 {
			if err := tb.Flush(bg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkReadRow(b *testing.B) {
	tb := benchTablet(b, wal.SyncNone)
	const n = 20000
	loadRows(b, tb, n)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cells, err := tb.ReadRow(bg, []byte(fmt.Sprintf("row%09d", i%n)), nil)
		if err != nil || len(cells) != 1 {
			b.Fatal(len(cells), err)
		}
	}
}

func BenchmarkScan(b *testing.B) { benchScan(b, false) }

// BenchmarkScanReverse is BenchmarkScan reversed: four SSTables walked
// backwards (and an empty memtable).
func BenchmarkScanReverse(b *testing.B) { benchScan(b, true) }

func benchScan(b *testing.B, reverse bool) {
	tb := benchTablet(b, wal.SyncNone)
	const n = 20000
	loadRows(b, tb, n)
	b.ReportAllocs()
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		it, err := tb.NewRowIterator(bg, ReadOptions{Reverse: reverse})
		if err != nil {
			b.Fatal(err)
		}
		for it.Next() {
			rows++
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
