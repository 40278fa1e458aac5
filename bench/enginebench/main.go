// Command enginebench runs the same storage workloads, one after another in
// one run, on Tabula's tablet engine and on two peer Go LSM engines (pebble
// and goleveldb), and prints ops/s, MB/s and Tabula's ratio to each peer.
//
//	cd bench && go run ./enginebench -dir /tmp/enginebench
//
// Workloads (16-byte keys; values half random bytes, half zeros, so about 2×
// compressible): sequential insert, random insert, random point reads after
// a flush and full compaction (every engine with the same block cache),
// a full forward scan, and durable (synced) writes from 1 and from 64
// concurrent writers.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

var (
	flagDir        = flag.String("dir", "", "scratch folder (default: a new temp folder, removed afterwards)")
	flagSizes      = flag.String("sizes", "100:1000000,1000:200000", "value size:count pairs")
	flagReads      = flag.Int("reads", 200000, "random point reads per size")
	flagDurableOps = flag.Int("durable-ops", 2000, "synced writes per durable workload")
	flagCache      = flag.Int64("cache", 64<<20, "block cache bytes for every engine")
	flagMemtable   = flag.Int64("memtable", 4<<20, "memtable (write buffer) bytes for every engine; the default is pebble's and goleveldb's default")
	flagEngines    = flag.String("engines", "tabula,pebble,goleveldb", "engines to run")
	flagSeed       = flag.Int64("seed", 1, "random seed")
	flagCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
)

type result struct {
	workload, engine string
	ops              int
	bytes            int64
	elapsed          time.Duration
}

func (r result) opsPerSec() float64 { return float64(r.ops) / r.elapsed.Seconds() }
func (r result) mbPerSec() float64  { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }

func key(i int) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k[8:], uint64(i))
	copy(k, "tabulakey")
	return k
}

func value(r *rand.Rand, size int) []byte {
	v := make([]byte, size)
	r.Read(v[:size/2])
	return v
}

func main() {
	flag.Parse()
	if *flagCPUProfile != "" {
		f, err := os.Create(*flagCPUProfile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer func() {
			pprof.StopCPUProfile()
			check(f.Close())
		}()
	}
	dir := *flagDir
	if dir == "" {
		d, err := os.MkdirTemp("", "enginebench")
		check(err)
		defer os.RemoveAll(d)
		dir = d
	}
	var results []result
	for _, pair := range strings.Split(*flagSizes, ",") {
		var size, count int
		_, err := fmt.Sscanf(pair, "%d:%d", &size, &count)
		check(err)
		for _, e := range engines {
			if !strings.Contains(*flagEngines, e.name) {
				continue
			}
			results = append(results, runSize(filepath.Join(dir, fmt.Sprintf("%s-%d", e.name, size)), e.name, e.open, size, count)...)
		}
	}
	for _, e := range engines {
		if !strings.Contains(*flagEngines, e.name) {
			continue
		}
		results = append(results, runDurable(filepath.Join(dir, e.name+"-durable"), e.name, e.open)...)
	}
	report(results)
}

func runSize(dir, name string, open opener, size, count int) []result {
	r := rand.New(rand.NewSource(*flagSeed))
	var out []result
	suffix := fmt.Sprintf(" %dB", size)
	// Sequential insert into a fresh engine.
	{
		e, err := open(dir+"-seq", false, *flagCache)
		check(err)
		start := time.Now()
		for i := 0; i < count; i++ {
			check(e.Put(key(i), value(r, size), false))
		}
		out = append(out, result{"seq insert" + suffix, name, count, int64(count * (16 + size)), time.Since(start)})
		check(e.Close())
		os.RemoveAll(dir + "-seq")
	}
	// Random insert, then reads and a scan on the same data.
	e, err := open(dir+"-rand", false, *flagCache)
	check(err)
	perm := r.Perm(count)
	start := time.Now()
	for _, i := range perm {
		check(e.Put(key(i), value(r, size), false))
	}
	out = append(out, result{"random insert" + suffix, name, count, int64(count * (16 + size)), time.Since(start)})
	check(e.FlushAndCompact())
	start = time.Now()
	var got int64
	for i := 0; i < *flagReads; i++ {
		v, err := e.Get(key(r.Intn(count)))
		check(err)
		got += int64(len(v) + 16)
	}
	out = append(out, result{"random read" + suffix, name, *flagReads, got, time.Since(start)})
	start = time.Now()
	n, b, err := e.Scan()
	check(err)
	if n != count {
		check(fmt.Errorf("%s scan saw %d keys, want %d", name, n, count))
	}
	out = append(out, result{"full scan" + suffix, name, n, b, time.Since(start)})
	check(e.Close())
	os.RemoveAll(dir + "-rand")
	return out
}

func runDurable(dir, name string, open opener) []result {
	var out []result
	for _, writers := range []int{1, 64} {
		d := fmt.Sprintf("%s-%d", dir, writers)
		e, err := open(d, true, *flagCache)
		check(err)
		ops := *flagDurableOps
		if writers > 1 {
			ops *= 8 // many writers go faster; give them enough work to measure
		}
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewSource(int64(w)))
				for i := w; i < ops; i += writers {
					check(e.Put(key(i), value(r, 100), true))
				}
			}(w)
		}
		wg.Wait()
		out = append(out, result{fmt.Sprintf("durable writes x%d", writers), name, ops, int64(ops * 116), time.Since(start)})
		check(e.Close())
		os.RemoveAll(d)
	}
	return out
}

func report(results []result) {
	byWorkload := map[string]map[string]result{}
	var order []string
	for _, r := range results {
		if byWorkload[r.workload] == nil {
			byWorkload[r.workload] = map[string]result{}
			order = append(order, r.workload)
		}
		byWorkload[r.workload][r.engine] = r
	}
	fmt.Printf("%-26s %-10s %12s %10s %14s %14s\n", "workload", "engine", "ops/s", "MB/s", "tabula/pebble", "tabula/leveldb")
	for _, w := range order {
		m := byWorkload[w]
		for _, e := range engines {
			r, ok := m[e.name]
			if !ok {
				continue
			}
			ratio := func(peer string) string {
				p, ok := m[peer]
				t, tok := m["tabula"]
				if e.name != "tabula" || !ok || !tok {
					return ""
				}
				return fmt.Sprintf("%.2fx", t.opsPerSec()/p.opsPerSec())
			}
			fmt.Printf("%-26s %-10s %12.0f %10.1f %14s %14s\n", w, e.name, r.opsPerSec(), r.mbPerSec(), ratio("pebble"), ratio("goleveldb"))
		}
	}
	if m, ok := byWorkload["durable writes x64"]; ok {
		if one, ok := byWorkload["durable writes x1"]["tabula"]; ok {
			if many, ok := m["tabula"]; ok {
				fmt.Printf("\ntabula group commit: 64 durable writers = %.1fx one durable writer\n", many.opsPerSec()/one.opsPerSec())
			}
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}
