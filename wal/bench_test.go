package wal

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkAppendSync1: one writer, SyncAlways: one fsync per record.
func BenchmarkAppendSync1(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := l.Append(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendSync64: 64 concurrent writers, SyncAlways: group commit
// shares fsyncs between them.
func BenchmarkAppendSync64(b *testing.B) {
	l, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := l.fsyncs.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Append(payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(l.fsyncs.Load()-start)/float64(b.N), "fsyncs/op")
}

// BenchmarkAppendModes: Append (Write then Wait) of 100-byte records by 1,
// 4 and 64 concurrent writers in each sync mode, reporting the write(2)
// calls (the process's syscw in /proc/self/io) and fsyncs per record: how
// much concurrent writers, and SyncBuffered's flusher, share them.
func BenchmarkAppendModes(b *testing.B) {
	for _, name := range []string{"none", "buffered", "always"} {
		mode, err := ParseSyncMode(name)
		if err != nil {
			continue // a mode this version does not have
		}
		for _, writers := range []int{1, 4, 64} {
			b.Run(fmt.Sprintf("mode=%s/writers=%d", name, writers), func(b *testing.B) {
				benchmarkAppend(b, mode, writers)
			})
		}
	}
}

func benchmarkAppend(b *testing.B, mode SyncMode, writers int) {
	l, err := Open(Options{Dir: b.TempDir(), SyncMode: mode})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	syncs, writes := l.fsyncs.Load(), writeCalls(b)
	b.ResetTimer()
	if writers == 1 {
		for range b.N {
			if err := l.Append(payload); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := l.Append(payload); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(writeCalls(b)-writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(l.fsyncs.Load()-syncs)/float64(b.N), "fsyncs/op")
}

// writeCalls returns the write system calls the process has made so far.
func writeCalls(b *testing.B) int64 {
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

// BenchmarkAppendSyncRotating: 100-byte records appended with SyncAlways
// by 1 and 64 writers to a log whose 256 KiB segments are removed as soon
// as they are rotated out (as a flush removes them), with recycling off
// and on. The timer starts once the log has rotated past its pool, so
// with recycling on every segment measured overwrites the file of a
// removed one (the steady state of a log that has rotated at least
// RecycleSegments+1 times); with it off every segment is a new file.
func BenchmarkAppendSyncRotating(b *testing.B) {
	for _, recycle := range []struct {
		name string
		keep int
	}{{"off", -1}, {"on", 0}} {
		for _, writers := range []int{1, 64} {
			b.Run(fmt.Sprintf("recycle=%s/writers=%d", recycle.name, writers), func(b *testing.B) {
				benchmarkRotating(b, recycle.keep, writers)
			})
		}
	}
}

func benchmarkRotating(b *testing.B, keep, writers int) {
	const segmentSize = 256 << 10
	l, err := Open(Options{Dir: b.TempDir(), SegmentSize: segmentSize, RecycleSegments: keep})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	// A writer that sees a new segment removes the ones before it.
	var removed atomic.Uint64
	removed.Store(l.Segment())
	removeOld := func() {
		if seg := l.Segment(); seg != removed.Load() && removed.Swap(seg) != seg {
			if err := l.RemoveBefore(seg); err != nil {
				b.Error(err)
			}
		}
	}
	// Warm up: fill segments (large records, few fsyncs) until the pool
	// has been through twice.
	big := make([]byte, 32<<10)
	for l.Segment() < uint64(defaultRecycle)*2+2 {
		if err := l.Append(big); err != nil {
			b.Fatal(err)
		}
		removeOld()
	}
	payload := make([]byte, 100)
	b.SetBytes(int64(len(payload)))
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	first := l.Segment()
	b.ResetTimer()
	if writers == 1 {
		for range b.N {
			if err := l.Append(payload); err != nil {
				b.Fatal(err)
			}
			removeOld()
		}
	} else {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := l.Append(payload); err != nil {
					b.Error(err)
					return
				}
				removeOld()
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(l.Segment()-first), "rotations")
}
