package tablet

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/offheap"
	"github.com/tabuladb/tabula/internal/testkit/shuffle"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/wal"
)

// TestMeasureMemory measures where the memory goes in bench/enginebench's
// 100-byte random workload on one tablet configured as enginebench
// configures it (one snappy family keeping one version with a row bloom
// filter and 4 KiB data blocks, an 8 MiB block cache, a 4 MiB memtable,
// no syncs): N random
// inserts, a flush and a major compaction, 200,000 random reads, a full
// scan. At every phase it logs the process's peak and current RSS
// (VmHWM, VmRSS), the Go runtime's view (live heap after the last GC, the
// heap goal, heap in use, stacks, GC metadata, all mapped memory) and the
// tablet's own accounting (Stats().Memory); at the end it writes heap
// profiles (inuse and alloc space) after the inserts, the compaction,
// the reads and the scan. It only runs with TABULA_MEMPROFILE set to the key count
// (TABULA_MEMPROFILE_DIR names the profiles' folder, default
// /tmp/tabula-memprofile):
//
//	TABULA_MEMPROFILE=4000000 go test ./tabletserver/tablet -run TestMeasureMemory -v -timeout 30m
//
// Run it once per key count: the peak RSS is the process's.
func TestMeasureMemory(t *testing.T) {
	env := os.Getenv("TABULA_MEMPROFILE")
	if env == "" {
		t.Skip("set TABULA_MEMPROFILE=<keys> to measure")
	}
	count, err := strconv.Atoi(env)
	if err != nil || count <= 0 {
		t.Fatalf("TABULA_MEMPROFILE=%q: want a key count", env)
	}
	profDir := os.Getenv("TABULA_MEMPROFILE_DIR")
	if profDir == "" {
		profDir = "/tmp/tabula-memprofile"
	}
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	const size, reads = 100, 200000
	tb, err := Open(Options{
		Dir: t.TempDir(), Create: true,
		Families: []families.Family{{
			Name: "f", MaxVersions: 1,
			Compression: families.CompressionSnappy, Bloom: families.BloomRow,
			BlockSize: 4096, // enginebench's -block-size default
		}},
		SyncMode:     wal.SyncNone,
		Cache:        sstable.NewCache(8 << 20),
		MemtableSize: 4 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	ctx := context.Background()
	m := newMemSampler(t, tb)
	defer m.stop()
	m.phase("open")

	r := rand.New(rand.NewSource(1))
	began := time.Now()
	// The keys' random order is computed on the fly: a rand.Perm slice
	// would add 8 bytes per key (30.5 MiB at 4M) to the live heap measured.
	perm := shuffle.New(count, r.Int63())
	for n := range count {
		i := perm.At(n)
		v := make([]byte, size)
		r.Read(v[:size/2])
		if err := tb.Apply(ctx, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			t.Fatal(err)
		}
		if (n+1)%(count/4) == 0 {
			m.phase(fmt.Sprintf("insert %d%%", (n+1)*100/count))
		}
	}
	t.Logf("inserted %d keys in %v", count, time.Since(began).Round(time.Millisecond))
	m.heapProfile(filepath.Join(profDir, fmt.Sprintf("heap-%d-inserted.pb.gz", count)))
	if err := tb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m.phase("flushed")
	if err := tb.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	m.phase("compacted")
	m.heapProfile(filepath.Join(profDir, fmt.Sprintf("heap-%d-compacted.pb.gz", count)))
	for i := 0; i < reads; i++ {
		cells, err := tb.ReadRow(ctx, engineKey(r.Intn(count)), nil)
		if err != nil || len(cells) != 1 {
			t.Fatalf("read: %d cells, %v", len(cells), err)
		}
	}
	m.phase("read")
	m.heapProfile(filepath.Join(profDir, fmt.Sprintf("heap-%d-read.pb.gz", count)))
	it, err := tb.NewRowIterator(ctx, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != count {
		t.Fatalf("scan saw %d rows, %v", n, err)
	}
	m.phase("scanned")
	m.heapProfile(filepath.Join(profDir, fmt.Sprintf("heap-%d-scanned.pb.gz", count)))
	checkFileEstimates(t, tb)
}

// checkFileEstimates logs, for each open SSTable, the heap a fresh reader
// of it takes (index, filter, properties) against what the tablet's own reader reports (sstable.Reader.MetadataBytes).
func checkFileEstimates(t *testing.T, tb *Tablet) {
	v, err := tb.currentVersion()
	if err != nil {
		t.Fatal(err)
	}
	defer v.unref()
	for _, fs := range v.files {
		for _, f := range fs {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r, err := sstable.Open(f.path, sstable.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			p := r.Properties()
			t.Logf("%s: %d data blocks, a reader holds %d KiB of heap, reports %d KiB",
				filepath.Base(f.path), p.NumDataBlocks, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>10, f.metadataBytes()>>10)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// memSampler logs the process's and the tablet's memory at each phase and
// follows the peaks in between (every 10 ms).
type memSampler struct {
	t  *testing.T
	tb *Tablet

	// mu protects the fields below.
	mu                  sync.Mutex
	peakRSS             int64 // VmRSS seen by the sampler, KiB
	peakGoal, peakTotal uint64
	peakMemtable        int64
	peakWriting         int64 // SSTable writers in flight
	peakOffHeap         int64 // internal/offheap's maps

	done chan struct{}
	wg   sync.WaitGroup
}

var memMetrics = []string{
	"/gc/heap/live:bytes",                  // live heap at the last GC
	"/gc/heap/goal:bytes",                  // heap size the next GC aims at
	"/memory/classes/heap/objects:bytes",   // heap objects, live and dead
	"/memory/classes/heap/unused:bytes",    // heap spans in use, free space
	"/memory/classes/heap/free:bytes",      // heap spans mapped, not in use
	"/memory/classes/heap/released:bytes",  // heap returned to the OS
	"/memory/classes/heap/stacks:bytes",    // goroutine stacks
	"/memory/classes/metadata/other:bytes", // GC metadata and more
	"/memory/classes/total:bytes",          // all mapped by the runtime
	"/gc/cycles/total:gc-cycles",           // GCs so far
	"/cpu/classes/gc/total:cpu-seconds",    // CPU spent in GC
	"/cpu/classes/user:cpu-seconds",        // CPU spent in user code
	"/memory/classes/metadata/mspan/inuse:bytes",
}

func newMemSampler(t *testing.T, tb *Tablet) *memSampler {
	runtime.GC()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): VmHWM includes the test binary's start", err)
	}
	m := &memSampler{t: t, tb: tb, done: make(chan struct{})}
	m.wg.Add(1)
	go m.loop()
	t.Logf("%-11s %7s %7s | %7s %7s %7s %7s %6s %6s %7s %5s %6s | %7s %6s %6s %5s %7s %7s %7s",
		"phase", "HWM", "RSS", "live", "goal", "objs", "free", "stack", "meta", "total", "GCs", "gcCPU",
		"memtab", "flush", "arena", "files", "fmeta", "cache", "offheap")
	return m
}

func (m *memSampler) loop() {
	defer m.wg.Done()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	samples := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/memory/classes/total:bytes"}}
	for {
		select {
		case <-m.done:
			return
		case <-tick.C:
		}
		rss := procStatusKiB("VmRSS")
		metrics.Read(samples)
		_, _, mem := m.tb.memtableBytes()
		m.mu.Lock()
		m.peakRSS = max(m.peakRSS, rss)
		m.peakGoal = max(m.peakGoal, samples[0].Value.Uint64())
		m.peakTotal = max(m.peakTotal, samples[1].Value.Uint64())
		m.peakMemtable = max(m.peakMemtable, mem)
		m.peakWriting = max(m.peakWriting, m.tb.writing.bytes())
		m.peakOffHeap = max(m.peakOffHeap, offheap.Mapped())
		m.mu.Unlock()
	}
}

func (m *memSampler) stop() {
	close(m.done)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.t.Logf("peaks seen every 10 ms: VmRSS %d MiB, heap goal %d MiB, runtime total %d MiB, memtable arenas %d MiB, SSTable writers %.1f MiB, off the heap %.1f MiB",
		m.peakRSS>>10, m.peakGoal>>20, m.peakTotal>>20, m.peakMemtable>>20, float64(m.peakWriting)/(1<<20), float64(m.peakOffHeap)/(1<<20))
}

// phase logs one line: MiB unless named otherwise.
func (m *memSampler) phase(name string) {
	s := make([]metrics.Sample, len(memMetrics))
	for i := range s {
		s[i].Name = memMetrics[i]
	}
	metrics.Read(s)
	u := func(i int) uint64 { return s[i].Value.Uint64() >> 20 }
	st := m.tb.Stats().Memory
	m.t.Logf("%-11s %7d %7d | %7d %7d %7d %7d %6d %6d %7d %5d %6.1f | %7d %6d %6d %5d %7.1f %7d %7.1f",
		name, procStatusKiB("VmHWM")>>10, procStatusKiB("VmRSS")>>10,
		u(0), u(1), u(2), u(4), u(6), u(7)+u(12), u(8), s[9].Value.Uint64(), s[10].Value.Float64(),
		st.Memtable>>20, st.MemtableFlushing>>20, st.MemtableArena>>20, st.OpenFiles, float64(st.FileMetadata)/(1<<20), st.BlockCache>>20, float64(offheap.Mapped())/(1<<20))
}

func (m *memSampler) heapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		m.t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		m.t.Fatal(err)
	}
	m.t.Logf("heap profile: %s", path)
}

// procStatusKiB returns a field of /proc/self/status in KiB (0 if absent).
func procStatusKiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
