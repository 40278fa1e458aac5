package tablet

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/wal"
)

// The benchmarks in this file mirror bench/enginebench's workloads (16-byte
// keys, half-random values, one snappy family with one version and a row
// bloom filter) so that the engine's hot paths can be profiled with
// `go test -bench Engine -cpuprofile`.

func engineKey(i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	copy(k, "tabulakey")
	return k
}

func openEngineTablet(b *testing.B) *Tablet {
	return openTablet(b, Options{
		Dir: b.TempDir(), Create: true,
		Families: []families.Family{{
			Name: "f", MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
		}},
		SyncMode:              wal.SyncNone,
		Cache:                 sstable.NewCache(64 << 20),
		DisableBackgroundWork: true,
	})
}

// loadEngine inserts count rows in random order, then flushes and compacts.
func loadEngine(b *testing.B, tb *Tablet, size, count int) {
	r := rand.New(rand.NewSource(1))
	for _, i := range r.Perm(count) {
		v := make([]byte, size)
		r.Read(v[:size/2])
		if err := tb.Apply(bg, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := tb.Flush(bg); err != nil {
		b.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		b.Fatal(err)
	}
}

var engineSizes = []struct{ size, count int }{{100, 100000}, {1000, 20000}}

func BenchmarkEngineScan(b *testing.B) {
	for _, s := range engineSizes {
		b.Run(fmt.Sprintf("%dB", s.size), func(b *testing.B) {
			tb := openEngineTablet(b)
			loadEngine(b, tb, s.size, s.count)
			b.ReportAllocs()
			b.ResetTimer()
			var bytes int64
			for i := 0; i < b.N; i++ {
				it, err := tb.NewRowIterator(bg, ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for it.Next() {
					n++
					bytes += int64(len(it.Row()))
					for _, c := range it.Cells() {
						bytes += int64(len(c.Value))
					}
				}
				if err := it.Close(); err != nil {
					b.Fatal(err)
				}
				if n != s.count {
					b.Fatalf("scan saw %d rows, want %d", n, s.count)
				}
			}
			b.ReportMetric(float64(bytes)/1e6/b.Elapsed().Seconds(), "MB/s")
		})
	}
}

func BenchmarkEngineReadRow(b *testing.B) {
	for _, s := range engineSizes {
		b.Run(fmt.Sprintf("%dB", s.size), func(b *testing.B) {
			tb := openEngineTablet(b)
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

func BenchmarkEngineRandomInsert(b *testing.B) {
	tb := openEngineTablet(b)
	r := rand.New(rand.NewSource(1))
	v := make([]byte, 100)
	r.Read(v[:50])
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tb.Apply(bg, engineKey(int(r.Int63())), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			b.Fatal(err)
		}
	}
}
