package tablet

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/wal"
)

// BenchmarkEngineInsertSyncMode: one writer's sequential and random
// 100-byte inserts (bench/enginebench's shape and configuration: 4 MiB
// memtable, 8 MiB block cache, background flushes and compactions) in the
// commit log's non-durable modes, reporting the process's write(2) calls
// per insert (flushes and compactions included).
func BenchmarkEngineInsertSyncMode(b *testing.B) {
	for _, name := range []string{"none", "buffered"} {
		mode, err := wal.ParseSyncMode(name)
		if err != nil {
			continue // a mode this version does not have
		}
		for _, order := range []string{"seq", "random"} {
			b.Run(fmt.Sprintf("mode=%s/order=%s", name, order), func(b *testing.B) {
				tb := openTablet(b, Options{
					Dir: b.TempDir(), Create: true,
					Families: []families.Family{{
						Name: "f", MaxVersions: 1,
						Compression: families.CompressionSnappy, Bloom: families.BloomRow,
					}},
					SyncMode:     mode,
					Cache:        sstable.NewCache(8 << 20),
					MemtableSize: 4 << 20,
				})
				r := rand.New(rand.NewSource(1))
				v := make([]byte, 100)
				r.Read(v[:50])
				writes := syscw(b)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := i
					if order == "random" {
						k = int(r.Int63())
					}
					if err := tb.Apply(bg, engineKey(k), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(syscw(b)-writes)/float64(b.N), "writes/op")
			})
		}
	}
}

// syscw returns the write system calls the process has made so far.
func syscw(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("no write-call count: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Skip("no syscw in /proc/self/io")
	return 0
}

// BenchmarkSequentialInsert1000B is one writer's sequential 1000-byte
// inserts in sync mode buffered, as enginebench configures the tablet: a
// load bounded by the flush, whose writers wait for the one before
// (stall-s: the time they waited, in seconds).
func BenchmarkSequentialInsert1000B(b *testing.B) {
	tb := openTablet(b, Options{
		Dir: b.TempDir(), Create: true,
		Families: []families.Family{{
			Name: "f", MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
		}},
		SyncMode:     wal.SyncBuffered,
		Cache:        sstable.NewCache(8 << 20),
		MemtableSize: 4 << 20,
	})
	v := make([]byte, 1000)
	rand.New(rand.NewSource(1)).Read(v[:500])
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := tb.Apply(bg, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st := tb.Stats()
	b.ReportMetric(float64(st.WriteStalls), "stalls")
	b.ReportMetric(st.WriteStallTime.Seconds(), "stall-s")
}
