package tablet

import (
	"math/rand"
	"syscall"
	"testing"

	"github.com/tabuladb/tabula/cell"
)

// The benchmarks in this file measure the memtable alone, on
// bench/enginebench's shape: 16-byte row keys, 100-byte values, a memtable
// of about 4 MiB of data (then a fresh one, as after a flush).

// cpuClock reports the process's CPU time per operation ("cpu-ns/op")
// beside the wall time: on a shared machine wall time counts other
// processes' turns too, CPU time much less so.
type cpuClock struct{ start int64 }

func cpuNow() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reset restarts the benchmark's timer and the CPU clock.
func (c *cpuClock) reset(b *testing.B) {
	b.ResetTimer()
	c.start = cpuNow()
}

// report adds the CPU time per operation since reset.
func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(cpuNow()-c.start)/float64(b.N), "cpu-ns/op")
}

// memtableEntries is how many 100-byte cells make about 4 MiB of data.
const memtableEntries = 4 << 20 / (16 + 100 + 24)

// memtableRows returns memtableEntries row keys, in random or ascending
// order.
func memtableRows(random bool) [][]byte {
	rows := make([][]byte, memtableEntries)
	r := rand.New(rand.NewSource(1))
	for i := range rows {
		if random {
			rows[i] = engineKey(int(r.Int63()))
		} else {
			rows[i] = engineKey(i)
		}
	}
	return rows
}

func benchMemtableInsert(b *testing.B, random bool) {
	rows := memtableRows(random)
	v := make([]byte, 100)
	rand.New(rand.NewSource(2)).Read(v[:50])
	var m *memtable
	var c cpuClock
	b.ReportAllocs()
	c.reset(b)
	for i := 0; i < b.N; i++ {
		j := i % len(rows)
		if j == 0 {
			m = newMemtable()
		}
		bt := batch{seq: uint64(i + 1), row: rows[j], entries: []entry{{family: "f", kind: cell.KindSet, timestamp: 1, value: v}}}
		m.insertBatchLocked(&bt)
	}
	c.report(b)
}

// BenchmarkMemtableInsertRandom inserts cells of random rows, as the
// commit path does (key encoding included).
func BenchmarkMemtableInsertRandom(b *testing.B) { benchMemtableInsert(b, true) }

// BenchmarkMemtableInsertSequential inserts cells of ascending rows.
func BenchmarkMemtableInsertSequential(b *testing.B) { benchMemtableInsert(b, false) }

// skiplistKeys returns the encoded keys of memtableRows.
func skiplistKeys(random bool) [][]byte {
	rows := memtableRows(random)
	keys := make([][]byte, len(rows))
	for i, r := range rows {
		keys[i] = cell.AppendKey(nil, cell.Key{Row: r, Timestamp: 1, Seq: uint64(i + 1), Kind: cell.KindSet})
	}
	return keys
}

func benchSkiplistInsert(b *testing.B, random bool) {
	keys := skiplistKeys(random)
	v := make([]byte, 100)
	var s *skiplist
	var c cpuClock
	b.ReportAllocs()
	c.reset(b)
	for i := 0; i < b.N; i++ {
		j := i % len(keys)
		if j == 0 {
			s = newSkiplist()
		}
		s.insert(keys[j], v)
	}
	c.report(b)
}

// BenchmarkSkiplistInsertRandom inserts encoded keys in random order.
func BenchmarkSkiplistInsertRandom(b *testing.B) { benchSkiplistInsert(b, true) }

// BenchmarkSkiplistInsertSequential inserts encoded keys in ascending order.
func BenchmarkSkiplistInsertSequential(b *testing.B) { benchSkiplistInsert(b, false) }

// BenchmarkSkiplistSeekGE seeks random keys of a 4 MiB list.
func BenchmarkSkiplistSeekGE(b *testing.B) {
	keys := skiplistKeys(true)
	v := make([]byte, 100)
	s := newSkiplist()
	for _, k := range keys {
		s.insert(k, v)
	}
	r := rand.New(rand.NewSource(3))
	var c cpuClock
	b.ReportAllocs()
	c.reset(b)
	for i := 0; i < b.N; i++ {
		it := skipIter{s: s}
		if !it.SeekGE(keys[r.Intn(len(keys))]) {
			b.Fatal("key not found")
		}
	}
	c.report(b)
}

// BenchmarkEngineSequentialInsert is BenchmarkEngineRandomInsert with
// ascending rows.
func BenchmarkEngineSequentialInsert(b *testing.B) {
	tb := openEngineTablet(b)
	r := rand.New(rand.NewSource(1))
	v := make([]byte, 100)
	r.Read(v[:50])
	var c cpuClock
	b.ReportAllocs()
	c.reset(b)
	for i := 0; i < b.N; i++ {
		if err := tb.Apply(bg, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b)
}

// BenchmarkEngineRandomInsertCPU is BenchmarkEngineRandomInsert with the
// CPU time per operation.
func BenchmarkEngineRandomInsertCPU(b *testing.B) {
	tb := openEngineTablet(b)
	r := rand.New(rand.NewSource(1))
	v := make([]byte, 100)
	r.Read(v[:50])
	var c cpuClock
	b.ReportAllocs()
	c.reset(b)
	for i := 0; i < b.N; i++ {
		if err := tb.Apply(bg, engineKey(int(r.Int63())), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b)
}

// BenchmarkMemtableArenaAtLimit fills a memtable with random 100-byte
// cells until its bytes pass 4 MiB (where the tablet asks for a flush) and
// reports the bytes its arena chunks hold then ("arena-bytes") and the
// entries in it ("entries").
func BenchmarkMemtableArenaAtLimit(b *testing.B) {
	const limit = 4 << 20
	r := rand.New(rand.NewSource(1))
	v := make([]byte, 100)
	var held, entries int64
	for i := 0; i < b.N; i++ {
		m := newMemtable()
		n := 0
		for m.bytes.Load() <= limit {
			n++
			bt := batch{seq: uint64(n), row: engineKey(int(r.Int63())), entries: []entry{{family: "f", kind: cell.KindSet, timestamp: 1, value: v}}}
			m.insertBatchLocked(&bt)
		}
		held = 0
		for _, c := range *m.list("f").chunks.Load() {
			held += int64(len(c))
		}
		entries = int64(n)
	}
	b.ReportMetric(float64(held), "arena-bytes")
	b.ReportMetric(float64(entries), "entries")
}
