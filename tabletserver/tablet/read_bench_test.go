package tablet

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/wal"
)

// The benchmarks below are BenchmarkEngineScan and BenchmarkEngineReadRow
// with bench/enginebench's 8 MiB block cache: the 100 B table (about
// 13 MB of blocks) does not fit it, so reads miss, read and decompress
// blocks as the enginebench runs do.

func openSmallCacheTablet(b *testing.B) *Tablet {
	return openTablet(b, Options{
		Dir: b.TempDir(), Create: true,
		Families: []families.Family{{
			Name: "f", MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
		}},
		SyncMode:              wal.SyncNone,
		Cache:                 sstable.NewCache(8 << 20),
		DisableBackgroundWork: true,
	})
}

func BenchmarkSmallCacheScan(b *testing.B) {
	for _, s := range engineSizes {
		b.Run(fmt.Sprintf("%dB", s.size), func(b *testing.B) {
			tb := openSmallCacheTablet(b)
			loadEngine(b, tb, s.size, s.count)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it, err := tb.NewRowIterator(bg, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for it.Next() {
					n++
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
				if n != s.count {
					b.Fatalf("scan saw %d rows, want %d", n, s.count)
				}
			}
		})
	}
}

func BenchmarkSmallCacheReadRow(b *testing.B) {
	for _, s := range engineSizes {
		b.Run(fmt.Sprintf("%dB", s.size), func(b *testing.B) {
			tb := openSmallCacheTablet(b)
			loadEngine(b, tb, s.size, s.count)
			r := rand.New(rand.NewSource(2))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cells, err := tb.ReadRow(bg, engineKey(r.Intn(s.count)), nil)
				if err != nil || len(cells) != 1 || len(cells[0].Value) != s.size {
					b.Fatal(len(cells), err)
				}
			}
		})
	}
}
