package tablet_test

import (
	"context"
	"encoding/binary"
	"math/rand"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// BenchmarkMajorCompaction times one major compaction of a family that
// holds the given keys (100-byte values in random order, enginebench's
// configuration) in 16 overlapping SSTables of equal size, written with
// background work off, so every size merges the same number of inputs
// and only the files' sizes differ:
//
//	go test -run '^$' -bench 'MajorCompaction' -benchtime 1x -count 3 ./tabletserver/tablet
//
// ns/key is the compaction's wall time per key: flat from 1M to 4M keys
// means the compaction itself grows linearly.
func BenchmarkMajorCompaction(b *testing.B) {
	for _, n := range []int{1 << 20, 4 << 20} {
		b.Run("keys="+strconv.Itoa(n>>20)+"M", func(b *testing.B) {
			var total, cpu time.Duration
			for range b.N {
				d, c := majorCompaction(b, n, 16)
				total += d
				cpu += c
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n*b.N), "ns/key")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(n*b.N), "cpu-ns/key")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func majorCompaction(b *testing.B, n, files int) (time.Duration, time.Duration) {
	b.StopTimer()
	tb := openEngineBenchTablet(b, nil, true)
	ctx := context.Background()
	per := n / files
	put := benchKeys(b, tb, n)
	for i := range n {
		put(i)
		if (i+1)%per == 0 {
			if err := tb.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tb.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	cpu0 := processCPU()
	start := time.Now()
	if err := tb.Compact(ctx, true); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	c := processCPU() - cpu0
	b.StopTimer()
	return d, c
}

// benchKeys returns a function that writes the i-th of n keys (in an
// order shuffled once, as loadCompact's) with a 100-byte value, half of
// it random.
func benchKeys(b *testing.B, tb *tablet.Tablet, n int) func(i int) {
	rng := rand.New(rand.NewSource(1))
	order := rng.Perm(n)
	value := make([]byte, 100)
	key := make([]byte, 16)
	copy(key, "tabulakey")
	return func(i int) {
		binary.BigEndian.PutUint64(key[8:], uint64(order[i]))
		rng.Read(value[:50])
		if err := tb.Apply(context.Background(), key, []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: value}}); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU returns the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
