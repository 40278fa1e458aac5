package sstable

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// benchValue returns a value of n bytes, half random and half zeros, so
// that snappy halves it.
func benchValue(n int) []byte {
	v := make([]byte, n)
	rand.New(rand.NewSource(1)).Read(v[:n/2])
	return v
}

// appendBenchKey appends the cell key of row i (one column, one version).
func appendBenchKey(dst, row []byte, i int) ([]byte, []byte) {
	row = strconv.AppendInt(append(row[:0], "user"...), 1_000_000_000_000+int64(i), 10)
	return cell.AppendKey(dst[:0], cell.Key{Row: row, Qualifier: []byte("q"),
		Timestamp: 1_700_000_000_000_000, Seq: uint64(i), Kind: cell.KindSet}), row
}

// writeBenchFile writes n rows of one cell with values of valueSize bytes.
// It returns the writer's live heap just before Close: what it holds for
// the file besides the buffers of one block (the filter's entries, the
// index).
func writeBenchFile(b *testing.B, path string, opts WriterOptions, n, valueSize int, measure bool) (live uint64) {
	value := benchValue(valueSize)
	var ms runtime.MemStats
	if measure {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		live = ms.HeapAlloc
		b.StartTimer()
	}
	f, err := vfs.Default.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := NewWriter(f, opts)
	var key, row []byte
	for i := range n {
		key, row = appendBenchKey(key, row, i)
		if err := w.Add(key, value); err != nil {
			b.Fatal(err)
		}
	}
	if measure {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		live = ms.HeapAlloc - live
		b.StartTimer()
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return live
}

// BenchmarkWrite1M writes a file of a million rows of one 100-byte cell,
// snappy-compressed with a row filter, as a large flush or compaction of
// small cells does. Besides time and allocations (-benchmem) it reports
// live-B/op: the heap the writer holds just before Close, which grows with
// the file.
func BenchmarkWrite1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "w.sst")
	opts := WriterOptions{Compression: families.CompressionSnappy, Bloom: families.BloomRow}
	b.SetBytes(1_000_000 * 140)
	var live uint64
	for range b.N {
		live += writeBenchFile(b, path, opts, 1_000_000, 100, true)
	}
	b.ReportMetric(float64(live)/float64(b.N), "live-B/op")
}

// BenchmarkBlockSize reads files written with 4, 8 and 16 KiB data blocks
// (snappy, row filter), of 100-byte and 1000-byte values, through an 8 MiB
// block cache smaller than the files, as bench/enginebench's reads do:
// random point reads (filter, then an iterator seeking to the row's key,
// as the tablet does for a file) and full scans. Besides wall time it
// reports cpu-ns/op, the process's CPU time per operation, steadier than
// wall time on a shared machine.
func BenchmarkBlockSize(b *testing.B) {
	for _, vs := range []struct{ size, rows int }{{100, 300_000}, {1000, 60_000}} {
		for _, bs := range []int{4 << 10, 8 << 10, 16 << 10} {
			b.Run(fmt.Sprintf("value=%d/block=%dK", vs.size, bs>>10), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "b.sst")
				opts := WriterOptions{Compression: families.CompressionSnappy, Bloom: families.BloomRow, BlockSize: bs}
				writeBenchFile(b, path, opts, vs.rows, vs.size, false)
				r, err := Open(path, ReaderOptions{Cache: NewCache(8 << 20)})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				b.Run("read", func(b *testing.B) { benchPointReads(b, r, vs.rows, vs.size) })
				b.Run("scan", func(b *testing.B) { benchScans(b, r, vs.rows, vs.size) })
			})
		}
	}
}

func benchPointReads(b *testing.B, r *Reader, rows, valueSize int) {
	rng := rand.New(rand.NewSource(3))
	var key, row []byte
	cpu := cpuTime()
	for range b.N {
		key, row = appendBenchKey(key, row, rng.Intn(rows))
		if !r.MayContainRow(cell.EncodeRow(row)) {
			b.Fatal("filter ruled out a present row")
		}
		it := r.NewIter(nil, nil)
		if !it.SeekGE(key) || len(it.Value()) != valueSize {
			b.Fatalf("SeekGE: %v", it.Err())
		}
		if err := it.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

func benchScans(b *testing.B, r *Reader, rows, valueSize int) {
	b.SetBytes(int64(rows * (valueSize + 40)))
	cpu := cpuTime()
	for range b.N {
		it := r.NewIter(nil, nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil || n != rows {
			b.Fatalf("scanned %d rows: %v", n, err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
