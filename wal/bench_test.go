package wal

import (
	"runtime"
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
