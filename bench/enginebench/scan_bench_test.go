package main

import (
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/testkit/shuffle"
	"github.com/tabuladb/tabula/wal"
)

// BenchmarkFullScan is enginebench's full scan alone, repeated: each
// engine gets the run's random insert of ENGINEBENCH_SCAN_KEYS keys
// (default 1,000,000) of 100 B, flushed and compacted, then scans it b.N
// times. A run's scan row lasts a fraction of a second, too short for a
// profile; this one profiles (-cpuprofile) and compares builds of one
// engine on the same data.
//
//	go test -c -o /tmp/eb.test . && /tmp/eb.test -test.run '^$' \
//	  -test.bench 'FullScan/tabula' -test.benchtime 20x -test.cpuprofile /tmp/scan.prof
func BenchmarkFullScan(b *testing.B) {
	count := 1_000_000
	if s := os.Getenv("ENGINEBENCH_SCAN_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("ENGINEBENCH_SCAN_KEYS=%q: want a positive key count", s)
		}
		count = n
	}
	// main's defaults, in sync mode buffered as make bench runs it.
	c := config{cache: 8 << 20, memtable: 4 << 20, blockSize: 4096, bloomBits: 10,
		tabulaSync: wal.SyncBuffered, pebble2Format: "newest"}
	for _, name := range []string{"tabula", "pebble2"} {
		b.Run(name, func(b *testing.B) {
			open, err := openerFor(name)
			if err != nil {
				b.Fatal(err)
			}
			e, err := open(filepath.Join(b.TempDir(), name), false, c)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			r := rand.New(rand.NewSource(11))
			perm := shuffle.New(count, r.Int63())
			for n := range count {
				if err := e.Put(key(perm.At(n)), value(r, 100), false); err != nil {
					b.Fatal(err)
				}
			}
			if err := e.FlushAndCompact(); err != nil {
				b.Fatal(err)
			}
			cpu0 := processCPU(b)
			b.ResetTimer()
			for range b.N {
				n, _, err := e.Scan()
				if err != nil {
					b.Fatal(err)
				}
				if n != count {
					b.Fatalf("scan saw %d keys, want %d", n, count)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			// CPU time (user+system, every goroutine: the collector's
			// too) per scan, which a loaded machine moves less than the
			// wall time.
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
