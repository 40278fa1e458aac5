package sstable

import (
	"testing"

	"github.com/tabuladb/tabula/families"
)

// BenchmarkIterateSmallCache scans 100k entries (about 13 MB of blocks)
// through an 8 MiB cache, filling it or not (Iter.DontFillCache), as a
// compaction reads its inputs.
func BenchmarkIterateSmallCache(b *testing.B) {
	entries := benchKeys()
	path := writeBench(b, b.TempDir(), families.CompressionSnappy, entries)
	for _, fill := range []bool{true, false} {
		name := "fill"
		if !fill {
			name = "dontfill"
		}
		b.Run(name, func(b *testing.B) {
			r, err := Open(path, ReaderOptions{Cache: NewCache(8 << 20)})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				it := r.NewIter(nil, nil)
				if !fill {
					it.DontFillCache()
				}
				n := 0
				for ok := it.First(); ok; ok = it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != benchEntries {
					b.Fatalf("scanned %d entries: %v", n, err)
				}
			}
		})
	}
}
