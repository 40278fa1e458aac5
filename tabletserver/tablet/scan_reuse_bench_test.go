package tablet

import (
	"fmt"
	"testing"
)

// BenchmarkSmallCacheScanReuseCells is BenchmarkSmallCacheScan with and
// without ReadOptions.ReuseCells, as the tablet server scans.
func BenchmarkSmallCacheScanReuseCells(b *testing.B) {
	for _, s := range engineSizes {
		for _, reuse := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/reuse=%v", s.size, reuse), func(b *testing.B) {
				tb := openSmallCacheTablet(b)
				loadEngine(b, tb, s.size, s.count)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					it, err := tb.NewRowIterator(bg, ReadOptions{ReuseCells: reuse})
					if err != nil {
						b.Fatal(err)
					}
					n := 0
					for it.Next() {
						n += len(it.Cells())
					}
					if err := it.Close(); err != nil {
						b.Fatal(err)
					}
					if n != s.count {
						b.Fatalf("scan saw %d cells, want %d", n, s.count)
					}
				}
			})
		}
	}
}
