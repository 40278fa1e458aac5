package tablet

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// BenchmarkSortedRunReads reads 100,000 rows of 100 B loaded in key order
// (BenchmarkSmallCacheScan's tablet: 8 MiB block cache), kept as the 32
// files of one sorted run that their flushes wrote (files=32), or merged
// into one file by a major compaction (files=1): what reading a run's
// files one after another costs over reading one file.
func BenchmarkSortedRunReads(b *testing.B) {
	const count, size, files = 100000, 100, 32
	for _, merged := range []bool{false, true} {
		n := files
		if merged {
			n = 1
		}
		tb := openSmallCacheTablet(b)
		r := rand.New(rand.NewSource(1))
		for i := range count {
			v := make([]byte, size)
			r.Read(v[:size/2])
			if err := tb.Apply(bg, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
				b.Fatal(err)
			}
			if (i+1)%(count/files) == 0 {
				if err := tb.Flush(bg); err != nil {
					b.Fatal(err)
				}
			}
		}
		if merged {
			if err := tb.Compact(bg, true); err != nil {
				b.Fatal(err)
			}
		}
		if st := tb.Stats().Families["f"]; st.SSTables != n || st.SortedRuns != 1 {
			b.Fatalf("%d files in %d runs, want %d in 1", st.SSTables, st.SortedRuns, n)
		}
		b.Run(fmt.Sprintf("scan/files=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				it, err := tb.NewRowIterator(bg, ReadOptions{ReuseCells: true})
				if err != nil {
					b.Fatal(err)
				}
				rows := 0
				for it.Next() {
					rows++
				}
				if err := it.Close(); err != nil || rows != count {
					b.Fatalf("scan saw %d rows (%v), want %d", rows, err, count)
				}
			}
		})
		b.Run(fmt.Sprintf("readrow/files=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(2))
			b.ReportAllocs()
			for range b.N {
				cells, err := tb.ReadRow(bg, engineKey(r.Intn(count)), nil)
				if err != nil || len(cells) != 1 {
					b.Fatal(len(cells), err)
				}
			}
		})
	}
}
