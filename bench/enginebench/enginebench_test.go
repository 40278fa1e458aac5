package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/wal"
)

var testConfig = config{cache: 1 << 20, memtable: 64 << 10, blockSize: 4096, bloomBits: 10,
	tabulaSync: wal.SyncNone, pebble2Format: "newest"}

// TestEveryEngineRunsEveryWorkload runs every workload on every engine
// with a handful of keys, so the harness cannot rot silently: each engine
// opens, puts, flushes and compacts, gets and scans back what it wrote.
func TestEveryEngineRunsEveryWorkload(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), e.name)
			res, err := runSize(dir, e.name, e.open, testConfig, 100, 2000, 500, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{wSeqInsert, wRandInsert, wFlushCompact, wRandRead, wScan}
			if len(res) != len(want) {
				t.Fatalf("got %d results, want %d: %+v", len(res), len(want), res)
			}
			for i, r := range res {
				if !strings.HasPrefix(r.Workload, want[i]) || r.Engine != e.name || r.Ops < 1 {
					t.Errorf("result %d is %+v, want workload %s", i, r, want[i])
				}
			}
			res, err = runDurable(dir+"-durable", e.name, e.open, testConfig, 8)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 2 || res[0].Ops != 8 || res[1].Ops != 64 {
				t.Errorf("durable results %+v, want 8 and 64 ops", res)
			}
		})
	}
}

// TestSpawnRunsAJobInAChild runs one engine's workloads in a child
// process, as the harness does, and gets its results and its peak RSS.
func TestSpawnRunsAJobInAChild(t *testing.T) {
	res, err := spawn(job{Engine: "tabula", Size: 100, Count: 500}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rr := runResults{}
	for _, r := range res {
		rr.add(r)
	}
	if r, ok := rr["full scan 100 B"]["tabula"]; !ok || r.Ops != 500 {
		t.Errorf("scan result %+v, want 500 keys; all results %+v", r, res)
	}
	if r, ok := rr["peak RSS 100 B"]["tabula"]; !ok || r.Bytes < 1<<20 {
		t.Errorf("peak RSS result %+v, want at least 1 MiB", r)
	}
}

func TestWriteSyscallsCountsWrites(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/io is Linux's")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := writeSyscalls()
	for range 10 {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := writeSyscalls() - before; before < 0 || got < 10 {
		t.Errorf("syscw before %d, grew by %d over 10 writes", before, got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Errorf("median(nil) is not NaN")
	}
}

func TestRotateInterleavesEngines(t *testing.T) {
	names := []string{"a", "b", "c"}
	for run, want := range []string{"a,b,c", "b,c,a", "c,a,b", "a,b,c"} {
		if got := strings.Join(rotate(names, run), ","); got != want {
			t.Errorf("run %d: %s, want %s", run, got, want)
		}
	}
}

// TestRatioTableOnFixedRuns checks the table's medians and per-run ratios
// on three runs whose answers are known.
func TestRatioTableOnFixedRuns(t *testing.T) {
	ops := func(engine string, perSec float64, writes int64) result {
		return result{Workload: "random insert 100 B", Engine: engine, Ops: 1000,
			Nanos: int64(1000 / perSec * float64(time.Second)), Writes: writes}
	}
	rss := func(engine string, mib int64) result {
		return result{Workload: "peak RSS 100 B", Engine: engine, Bytes: mib << 20, Writes: -1}
	}
	fc := func(engine string, secs float64) result {
		return result{Workload: "flush+compact 100 B", Engine: engine, Ops: 1, Nanos: int64(secs * float64(time.Second))}
	}
	var runs []runResults
	// Tabula ÷ pebble2 per run: 2/1, 3/4, 10/5 → median 2; Tabula's
	// median ops/s 3; pebble2 is missing from the last run's RSS.
	for i, v := range [][2]float64{{2, 1}, {3, 4}, {10, 5}} {
		rr := runResults{}
		rr.add(ops("tabula", v[0], 1000))
		rr.add(ops("pebble2", v[1], int64(10*(i+1))))
		rr.add(rss("tabula", 300))
		if i < 2 {
			rr.add(rss("pebble2", 100*int64(i+1)))
		}
		rr.add(fc("tabula", 2))
		rr.add(fc("pebble2", 1))
		runs = append(runs, rr)
	}
	order := []string{"random insert 100 B", "flush+compact 100 B", "peak RSS 100 B", "no such row"}
	var b bytes.Buffer
	writeRatioTable(&b, runs, order, []string{"tabula", "pebble2"})
	want := `| workload | Tabula ops/s | ÷ pebble v2 | writes/op (Tabula / pebble v2) |
|---|---:|---:|---:|
| random insert 100 B | 3 ops/s | 2.00 | 1 / 0.02 |
| flush+compact 100 B | 2.00 s | 0.50 |  |
| peak RSS 100 B | 300 MiB | 2.25 |  |
`
	if b.String() != want {
		t.Errorf("ratio table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	writeEngineTable(&b, runs, order, []string{"tabula", "pebble2"})
	want = `| workload | Tabula | pebble v2 |
|---|---:|---:|
| random insert 100 B | 3 ops/s | 4 ops/s |
| flush+compact 100 B | 2.00 s | 1.00 s |
| peak RSS 100 B | 300 MiB | 150 MiB |
`
	if b.String() != want {
		t.Errorf("engine table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestGroupCommitIsMedianOfPerRunRatios(t *testing.T) {
	var runs []runResults
	for _, v := range [][2]float64{{10, 200}, {10, 100}, {20, 100}} {
		rr := runResults{}
		rr.add(result{Workload: durableName(1), Engine: "tabula", Ops: 10, Nanos: int64(10 / v[0] * float64(time.Second))})
		rr.add(result{Workload: durableName(64), Engine: "tabula", Ops: 80, Nanos: int64(80 / v[1] * float64(time.Second))})
		runs = append(runs, rr)
	}
	var b bytes.Buffer
	writeGroupCommit(&b, runs, []string{"tabula", "pebble2"})
	// Per-run ratios 20, 10, 5: median 10; pebble2 has no rows.
	if want := "Group commit, 64 durable writers ÷ 1 (median of per-run ratios): Tabula 10.0×\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestEngineNamesKeepsOrderAndAliases(t *testing.T) {
	got, err := engineNames("goleveldb, pebble,tabula")
	if err != nil || strings.Join(got, ",") != "tabula,pebble1,goleveldb" {
		t.Errorf("engineNames = %v, %v", got, err)
	}
	if _, err := engineNames("rocksdb"); err == nil {
		t.Errorf("engineNames accepted rocksdb")
	}
}
