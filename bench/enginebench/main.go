// Command enginebench runs the same storage workloads on Tabula's tablet
// engine and on three peer Go LSM engines (pebble v2, pebble v1 and
// goleveldb), all configured alike, and prints Tabula's ratio to each peer
// as a markdown table for docs/BENCHMARKS.md.
//
//	cd bench && go run ./enginebench -runs 3
//	make bench BENCH_FLAGS='-sizes 100:4000000 -runs 1'
//
// Workloads (16-byte keys; values half random bytes, half zeros, so about 2×
// compressible), per value size: sequential insert into a fresh store;
// random insert into another, then a flush and full compaction (timed),
// random point reads and a full forward scan; and, once, durable (synced)
// 100-byte writes from 1 and from 64 concurrent writers.
//
// Each engine's workloads of one size run in a child process of their own
// (this binary again, with a hidden -child flag), so the child's peak RSS
// (ru_maxrss) is that engine's; the child counts its write system calls
// (/proc/self/io syscw) around every workload. -runs interleaves the
// engines: every run starts the next engine in the list first. The report
// gives each engine's median and the median of the per-run ratios.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tabuladb/tabula/wal"
)

var (
	flagDir           = flag.String("dir", "", "scratch folder (default: a new temp folder, removed afterwards)")
	flagSizes         = flag.String("sizes", "100:1000000,1000:200000", "value size:key count pairs, e.g. 100:4000000,1000:800000")
	flagReads         = flag.Int("reads", 200000, "random point reads per size")
	flagDurableOps    = flag.Int("durable-ops", 2000, "synced writes of one writer (64 writers do 8× as many); 0 skips the durable rows")
	flagDurableWarmup = flag.Int("durable-warmup", 0, "writes (by 64 writers, half before each of two flushes) into each store before its durable rows are measured, so that its log has rotated and, if the engine recycles log files, writes into a recycled one (about warmup/2 records long); 0 measures a fresh store")
	flagCache         = flag.Int64("cache", 8<<20, "block cache bytes for every engine")
	flagMemtable      = flag.Int64("memtable", 4<<20, "memtable (write buffer) bytes for every engine; the default is pebble's and goleveldb's default")
	flagBlockSize     = flag.Int("block-size", 4096, "data block size in bytes for every engine; the default is pebble's and goleveldb's default")
	flagBloomBits     = flag.Int("bloom-bits", 10, "bloom filter bits per key for the peers (Tabula's filter targets 1 % false positives, which 10 bits give)")
	flagTabulaSync    = flag.String("tabula-sync", "none", "Tabula's commit log sync mode on the non-durable rows (any mode wal.ParseSyncMode accepts); the durable rows use always")
	flagPebble2Fmt    = flag.String("pebble2-format", "newest", "pebble v2's FormatMajorVersion: newest (FormatNewest: columnar blocks) or default (what pebble picks when unset)")
	flagEngines       = flag.String("engines", "tabula,pebble2,pebble1,goleveldb", "engines to run, comma-separated (pebble is pebble1)")
	flagRuns          = flag.Int("runs", 3, "interleaved runs of every engine; the report gives medians")
	flagSeed          = flag.Int64("seed", 1, "random seed (run i uses seed+i)")
	flagCPUProfile    = flag.String("cpuprofile", "", "write a CPU profile of every child to this path plus .<engine>-<size>-run<n>")
	flagRaw           = flag.String("raw", "", "append every child's results to this file as JSON lines, as they come (a run cut short keeps what it measured)")
	flagChild         = flag.String("child", "", "internal: run one job (JSON) in this process and print its results")
)

func main() {
	flag.Parse()
	c, err := configFromFlags()
	check(err)
	if *flagChild != "" {
		var j job
		check(json.Unmarshal([]byte(*flagChild), &j))
		check(runChild(j, filepath.Join(*flagDir, fmt.Sprintf("%s-%d", j.Engine, j.Size)), c))
		return
	}
	names, err := engineNames(*flagEngines)
	check(err)
	sizes, err := parseSizes(*flagSizes)
	check(err)
	if *flagRuns < 1 {
		check(fmt.Errorf("enginebench: -runs %d: want at least 1", *flagRuns))
	}
	dir := *flagDir
	if dir == "" {
		d, err := os.MkdirTemp("", "enginebench")
		check(err)
		defer os.RemoveAll(d)
		dir = d
	}
	printConfig(os.Stdout, c, names, sizes)

	var jobs [][]job // per run
	for run := 0; run < *flagRuns; run++ {
		var js []job
		rot := rotate(names, run)
		for _, s := range sizes {
			for _, n := range rot {
				js = append(js, job{Engine: n, Size: s.size, Count: s.count, Run: run})
			}
		}
		if *flagDurableOps > 0 {
			for _, n := range rot {
				js = append(js, job{Engine: n, Run: run})
			}
		}
		jobs = append(jobs, js)
	}
	var runs []runResults
	var order []string
	seen := map[string]bool{}
	for run, js := range jobs {
		rr := runResults{}
		for _, j := range js {
			start := time.Now()
			res, err := spawn(j, filepath.Join(dir, fmt.Sprintf("run%d", run)))
			check(err)
			fmt.Fprintf(os.Stderr, "enginebench: %s: %.1f s\n", j, time.Since(start).Seconds())
			check(appendRaw(*flagRaw, j, res))
			for _, r := range res {
				rr.add(r)
				if !seen[r.Workload] {
					seen[r.Workload] = true
					order = append(order, r.Workload)
				}
			}
		}
		runs = append(runs, rr)
	}
	fmt.Printf("\nMedians of %d interleaved runs; ratios are medians of per-run ratios (ops/s: Tabula ÷ peer, above 1 is Tabula faster; flush+compact: peer time ÷ Tabula time, above 1 is Tabula faster; peak RSS: Tabula ÷ peer, the goal is ≤ 1.5). writes/op: write system calls per op of the whole process (/proc/self/io syscw), background flushes and compactions included.\n\n", len(runs))
	writeRatioTable(os.Stdout, runs, order, names)
	fmt.Printf("\nEvery engine's medians:\n\n")
	writeEngineTable(os.Stdout, runs, order, names)
	fmt.Println()
	writeGroupCommit(os.Stdout, runs, names)
}

// appendRaw appends one child's results to path as a JSON line; an empty
// path does nothing.
func appendRaw(path string, j job, res []result) error {
	if path == "" {
		return nil
	}
	line, err := json.Marshal(struct {
		Job     job      `json:"job"`
		Results []result `json:"results"`
	}{j, res})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// configFromFlags is the one configuration every engine gets.
func configFromFlags() (config, error) {
	mode, err := wal.ParseSyncMode(*flagTabulaSync)
	if err != nil {
		return config{}, fmt.Errorf("enginebench: -tabula-sync: %w", err)
	}
	if *flagPebble2Fmt != "newest" && *flagPebble2Fmt != "default" {
		return config{}, fmt.Errorf("enginebench: -pebble2-format %q: want newest or default", *flagPebble2Fmt)
	}
	return config{
		cache: *flagCache, memtable: *flagMemtable, blockSize: *flagBlockSize,
		bloomBits: *flagBloomBits, tabulaSync: mode, pebble2Format: *flagPebble2Fmt,
	}, nil
}

// engineNames parses -engines into engines' order, aliases resolved.
func engineNames(s string) ([]string, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if a, ok := engineAliases[n]; ok {
			n = a
		}
		if _, err := openerFor(n); err != nil {
			return nil, err
		}
		want[n] = true
	}
	var out []string
	for _, e := range engines {
		if want[e.name] {
			out = append(out, e.name)
		}
	}
	return out, nil
}

type sizeCount struct{ size, count int }

func parseSizes(s string) ([]sizeCount, error) {
	var out []sizeCount
	seen := map[int]bool{}
	for _, pair := range strings.Split(s, ",") {
		var sc sizeCount
		if _, err := fmt.Sscanf(pair, "%d:%d", &sc.size, &sc.count); err != nil || sc.size < 1 || sc.count < 1 {
			return nil, fmt.Errorf("enginebench: -sizes %q: want size:count pairs of positive numbers", pair)
		}
		// The report's rows are named by value size: two key counts of
		// one size would be merged into one row's medians.
		if seen[sc.size] {
			return nil, fmt.Errorf("enginebench: -sizes %q: value size %d given twice; the report names rows by value size, so run one enginebench per key count (and compare the -raw outputs)", s, sc.size)
		}
		seen[sc.size] = true
		out = append(out, sc)
	}
	return out, nil
}

// rotate returns names starting at names[run mod len]: run 0 starts with
// the first engine, run 1 with the second, so no engine always runs on a
// machine that the one before it left busy (or idle).
func rotate(names []string, run int) []string {
	k := run % len(names)
	return append(append([]string(nil), names[k:]...), names[:k]...)
}

// syncPromise says what each engine's non-durable mode promises.
func syncPromise(mode wal.SyncMode) string {
	switch mode.String() {
	case "none":
		return "write(2) of every record before the write returns, no fsync: a process crash loses nothing, a machine crash may lose writes"
	case "interval":
		return "write(2) of every record before the write returns, fsync in the background every 100ms"
	case "always":
		return "fsync before the write returns"
	case "buffered":
		return "the record is in the log's memory buffer when the write returns, a flusher writes it out at once: a process crash may lose the last buffered writes (under 1 MiB), as pebble's NoSync"
	}
	return "see wal.SyncMode's doc"
}

func printConfig(w *os.File, c config, names []string, sizes []sizeCount) {
	fmt.Fprintf(w, "enginebench: engines %s; %d interleaved runs; sizes", strings.Join(names, ", "), *flagRuns)
	for _, s := range sizes {
		fmt.Fprintf(w, " %d B × %d keys", s.size, s.count)
	}
	fmt.Fprintf(w, "; %d random reads per size; durable writes %d (×1) and %d (×64)", *flagReads, *flagDurableOps, 8**flagDurableOps)
	if *flagDurableWarmup > 0 {
		fmt.Fprintf(w, " after %d warm-up writes and two flushes", *flagDurableWarmup)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "every engine: block cache %d B, memtable %d B, data blocks %d B, bloom filters (%d bits/key; Tabula 1 %% false positives), snappy, one version, the peers' L0 compaction at more than 4 files (Tabula's compaction is size-tiered: its default merge trigger, more than 8 files per family), 16-byte keys, each engine's workloads of one size in a child process of its own\n",
		c.cache, c.memtable, c.blockSize, c.bloomBits)
	fmt.Fprintf(w, "  tabula:    tablet.Options{MemtableSize, Cache: sstable.NewCache, L0Trigger 8 (default)}, family {MaxVersions 1, snappy, BloomRow, BlockSize}\n")
	fmt.Fprintf(w, "  pebble v2 %s: Options{MemTableSize, Cache, L0CompactionThreshold 4, FormatMajorVersion %s}, Levels[*]{BlockSize, bloom.FilterPolicy(%d), SnappyCompression}\n", moduleVersion("github.com/cockroachdb/pebble/v2"), c.pebble2Format, c.bloomBits)
	fmt.Fprintf(w, "  pebble v1 %s: Options{MemTableSize, Cache, L0CompactionThreshold 4}, Levels[0..6]{BlockSize, bloom.FilterPolicy(%d), SnappyCompression}\n", moduleVersion("github.com/cockroachdb/pebble"), c.bloomBits)
	fmt.Fprintf(w, "  goleveldb %s: opt.Options{BlockCacheCapacity, WriteBuffer, BlockSize, filter.NewBloomFilter(%d), SnappyCompression, CompactionL0Trigger 4}\n", moduleVersion("github.com/syndtr/goleveldb"), c.bloomBits)
	fmt.Fprintf(w, "sync, non-durable rows: Tabula sync=%s (%s); pebble v1/v2 NoSync (records buffered in user space and written by a background flusher: a process crash may lose the tail); goleveldb Sync=false (write(2) of every batch, no fsync)\n", c.tabulaSync, syncPromise(c.tabulaSync))
	fmt.Fprintf(w, "sync, durable rows: Tabula sync=always, pebble v1/v2 Sync, goleveldb Sync=true (fsync before the write returns; concurrent writers share fsyncs)\n")
}

// moduleVersion is the version of module path this binary was built with.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "?"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "?"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}
