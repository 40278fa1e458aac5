package tablet_test

import (
	"context"
	"encoding/binary"
	"flag"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/wal"
)

// BenchmarkLoadCompact loads n keys of 100-byte values in random order
// into one tablet configured as bench/enginebench's (one snappy family
// keeping one version, row bloom filter, 4 MiB memtable, 8 MiB block
// cache, background flushes and compactions), then flushes and runs a
// major compaction, and reports what flushes and compactions cost:
//
//	flushcompact-s   seconds spent in flushes and compactions (the sum of
//	                 their events' durations; background work overlaps the load)
//	written-MB       SSTable bytes written by flushes and compactions
//	write-amp        written bytes / ingested key and value bytes
//	compactions      compactions run
//	major-s          the final flush and major compaction, wall time
//	peak-heap-MB     the largest HeapInuse sampled (every 10 ms) during
//	                 the whole run
//	major-heap-MB    the same during the final major compaction, over the
//	                 heap in use when it started
//	hwm-MB           the process's peak RSS (VmHWM) at the end: meaningful
//	                 when one sub-benchmark runs per process
//
// Run one size per process, once:
//
//	go test -run '^$' -bench 'LoadCompact/keys=1M$' -benchtime 1x ./tabletserver/tablet
//
// -compact.heapprofile FILE writes a heap profile of the live objects each
// time the final major compaction's sampled heap reaches a new peak (what
// holds it; the GC it forces changes the timings).
func BenchmarkLoadCompact(b *testing.B) {
	for _, n := range []int{1 << 20, 4 << 20, 16 << 20} {
		b.Run("keys="+strconv.Itoa(n>>20)+"M", func(b *testing.B) {
			for range b.N {
				loadCompact(b, n)
			}
		})
	}
}

// openEngineBenchTablet opens a tablet configured as bench/enginebench's
// (one snappy family "f" keeping one version, row bloom filter, 4 MiB
// memtable, 8 MiB block cache, no syncs), closed when b ends.
func openEngineBenchTablet(b *testing.B, ev *tablet.Events, noBackground bool) *tablet.Tablet {
	tb, err := tablet.Open(tablet.Options{
		Dir: b.TempDir(), Create: true,
		Families: []families.Family{{
			Name: "f", MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
		}},
		SyncMode:              wal.SyncNone,
		Cache:                 sstable.NewCache(8 << 20),
		MemtableSize:          4 << 20,
		Events:                ev,
		DisableBackgroundWork: noBackground,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tb.Close() })
	return tb
}

var flagCompactHeapProfile = flag.String("compact.heapprofile", "", "BenchmarkLoadCompact: write a heap profile to this file at the major compaction's peak")

// writeHeapProfile writes the heap profile of live objects to path (after
// a GC: timings of a run with the flag are not comparable).
func writeHeapProfile(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Error(err)
		return
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Error(err)
	}
	if err := f.Close(); err != nil {
		b.Error(err)
	}
}

func loadCompact(b *testing.B, n int) {
	b.StopTimer()
	var flushNanos, compactNanos, written, compactions atomic.Int64
	ev := &tablet.Events{
		Flushed: func(e tablet.FlushEvent) {
			flushNanos.Add(int64(e.Duration))
			written.Add(int64(e.Bytes))
		},
		Compacted: func(e tablet.CompactionEvent) {
			compactNanos.Add(int64(e.Duration))
			written.Add(int64(e.BytesOut))
			compactions.Add(1)
		},
	}
	tb := openEngineBenchTablet(b, ev, false)

	var peak, majorPeak atomic.Uint64
	var inMajor atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			if inMajor.Load() && ms.HeapInuse > majorPeak.Load() {
				majorPeak.Store(ms.HeapInuse)
				if *flagCompactHeapProfile != "" {
					writeHeapProfile(b, *flagCompactHeapProfile)
				}
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	ctx := context.Background()
	put := benchKeys(b, tb, n)
	b.StartTimer()
	for i := range n {
		put(i)
	}
	ingested := int64(n) * (16 + 100)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	majorPeak.Store(base)
	inMajor.Store(true)
	start := time.Now()
	if err := tb.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if err := tb.Compact(ctx, true); err != nil {
		b.Fatal(err)
	}
	major := time.Since(start)
	inMajor.Store(false)
	b.StopTimer()

	const mb = 1e6 // benchstat reads the -MB metrics as decimal megabytes
	b.ReportMetric(float64(flushNanos.Load()+compactNanos.Load())/1e9, "flushcompact-s")
	b.ReportMetric(float64(written.Load())/mb, "written-MB")
	b.ReportMetric(float64(written.Load())/float64(ingested), "write-amp")
	b.ReportMetric(float64(compactions.Load()), "compactions")
	b.ReportMetric(major.Seconds(), "major-s")
	b.ReportMetric(float64(peak.Load())/mb, "peak-heap-MB")
	b.ReportMetric(float64(majorPeak.Load()-base)/mb, "major-heap-MB")
	b.ReportMetric(float64(vmHWM())/mb, "hwm-MB")
}

// vmHWM returns the process's peak resident set in bytes (Linux), 0
// elsewhere.
func vmHWM() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkFlushMemtable flushes a full 4 MiB memtable of 100-byte values
// (enginebench's configuration); with -benchmem, allocs/op show whether a
// flush allocates per entry or per block.
func BenchmarkFlushMemtable(b *testing.B) {
	tb := openEngineBenchTablet(b, nil, true)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	value := make([]byte, 100)
	key := make([]byte, 16)
	copy(key, "tabulakey")
	entries := 0
	b.ReportAllocs()
	for i := range b.N {
		b.StopTimer()
		entries = 0
		for tb.Stats().MemtableBytes < 4<<20 {
			binary.BigEndian.PutUint64(key[8:], uint64(rng.Intn(1<<24))) // enginebench's keys: zero bytes to escape
			rng.Read(value[:50])
			if err := tb.Apply(ctx, key, []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: int64(i + 1), Value: value}}); err != nil {
				b.Fatal(err)
			}
			entries++
		}
		b.StartTimer()
		if err := tb.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(entries), "entries/op")
}
