package tablet

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// BenchmarkSampleKeys samples a tablet of 64 MiB and of 1 GiB of data
// (rows of one 1000-byte cell in 8 KiB blocks, flushed every 64 MiB) every
// 256 MiB and every 1 MiB, its files open (a second sampling's cost: the
// first adds one tail read per file), beside SplitKey on the same tablet
// and sampleKeysByEntries (the first version: every index entry copied).
// The fixture takes a while to write (about 1 GiB on disk for the larger
// size). docs/BENCHMARKS.md "SampleRowKeys from the SSTable indexes".
func BenchmarkSampleKeys(b *testing.B) {
	for _, size := range []int{64 << 20, 1 << 30} {
		tb := openTablet(b, testOptions(b.TempDir()))
		val := make([]byte, 1000)
		for i := range val {
			val[i] = byte(i*7919 + i>>3)
		}
		const flushEvery = 64 << 20
		rows := size / len(val)
		for i := 0; i < rows; i++ {
			val[i%len(val)]++
			row := []byte(fmt.Sprintf("row%09d", i))
			if err := tb.Apply(bg, row, []cell.Mutation{{Kind: cell.SetCell, Family: "a", Qualifier: []byte("q"), Timestamp: 1, Value: val}}); err != nil {
				b.Fatal(err)
			}
			if (i+1)%(flushEvery/len(val)) == 0 || i == rows-1 {
				if err := tb.Flush(bg); err != nil {
					b.Fatal(err)
				}
			}
		}
		// Three rounds, the variants alternated within each (the machine is
		// shared); SplitKey is what SampleRowKeys answered before: one
		// middle row, from the same indexes plus each file's first row.
		for range 3 {
			for _, every := range []uint64{256 << 20, 1 << 20} {
				b.Run(fmt.Sprintf("tablet=%dMiB/every=%dMiB", size>>20, every>>20), func(b *testing.B) {
					if _, _, err := tb.SampleKeys(every); err != nil { // open the files
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					var n int
					var total uint64
					for range b.N {
						s, t, err := tb.SampleKeys(every)
						if err != nil {
							b.Fatal(err)
						}
						n, total = len(s), t
					}
					b.ReportMetric(float64(n), "samples")
					b.ReportMetric(float64(total)/(1<<20), "MiB")
				})
			}
			b.Run(fmt.Sprintf("tablet=%dMiB/entries-every=1MiB", size>>20), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					if _, _, err := sampleKeysByEntries(tb, 1<<20); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("tablet=%dMiB/SplitKey", size>>20), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					if _, err := tb.SplitKey(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		_ = tb.Close()
	}
}
