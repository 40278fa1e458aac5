package sstable

import (
	"encoding/binary"
	"math/rand"
	"strconv"
	"testing"
)

// BenchmarkFilterAddDirect adds n distinct row entries to a builder told
// their count (bits set in place, as a flush or compaction does), with a
// compaction's other work between two entries stood in for by copying a
// 128-byte value through a 4 MiB buffer. ns/op is per entry.
func BenchmarkFilterAddDirect(b *testing.B) {
	for _, n := range []int{1 << 20, 4 << 20} {
		b.Run("entries="+strconv.Itoa(n>>20)+"M", func(b *testing.B) {
			entries := make([]byte, 16*n)
			rand.New(rand.NewSource(1)).Read(entries)
			other := make([]byte, 4<<20)
			var value [128]byte
			b.ResetTimer()
			for i := 0; i < b.N; {
				fb := filterBuilder{fp: 0.01, expected: n}
				for j := 0; j < n && i < b.N; j, i = j+1, i+1 {
					e := entries[16*j : 16*j+16]
					binary.LittleEndian.PutUint64(value[:], uint64(j))
					copy(other[(j*128)&(len(other)-1):], value[:])
					fb.addRow(e)
				}
				fb.build(0.01)
				fb.free()
			}
		})
	}
}

// BenchmarkFilterProbe tests a filter of n entries, built as a flush or
// compaction builds it, with entries it holds and entries it does not, in
// random order: once the filter outgrows the CPU's caches, each probe's
// cache misses are most of its cost (docs/BENCHMARKS.md "A blocked bloom
// filter: tried, not kept").
func BenchmarkFilterProbe(b *testing.B) {
	for _, n := range []int{1 << 20, 4 << 20} {
		b.Run("entries="+strconv.Itoa(n>>20)+"M", func(b *testing.B) {
			entries := make([]byte, 16*2*n)
			rand.New(rand.NewSource(1)).Read(entries)
			fb := filterBuilder{fp: 0.01, expected: n}
			defer fb.free()
			for j := range n {
				fb.addRow(entries[16*j : 16*j+16])
			}
			f, err := decodeFilter(fb.build(0.01), formatVersion)
			if err != nil {
				b.Fatal(err)
			}
			hits := 0
			b.ResetTimer()
			for i := range b.N {
				j := (i * 7919) % (2 * n) // half present, half absent
				if f.mayContain(entries[16*j : 16*j+16]) {
					hits++
				}
			}
			b.ReportMetric(float64(hits)/float64(b.N), "passed/probe")
		})
	}
}
