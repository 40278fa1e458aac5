package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchOutput parses `tabula bench --output json` into rows by workload.
func benchOutput(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	res := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("bench line %q is not JSON: %v", line, err)
		}
		res[r["workload"].(string)] = r
	}
	return res
}

// checkBench requires every workload of a small bench to have touched
// every row: the writes wrote all of them (the sequential reads find each
// with its value, the scan returns each once), whatever the API.
func checkBench(t *testing.T, what string, r result, rows int, workloads ...string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", what, r.code, r.stdout, r.stderr)
	}
	res := benchOutput(t, r.stdout)
	if len(res) != len(workloads) {
		t.Errorf("%s: %d workloads in the output, want %d:\n%s", what, len(res), len(workloads), r.stdout)
	}
	for _, w := range workloads {
		row, ok := res[w]
		if !ok {
			t.Errorf("%s: no %s in the output:\n%s", what, w, r.stdout)
			continue
		}
		if ops := row["ops"].(float64); int(ops) != rows {
			t.Errorf("%s: %s did %v ops, want %d", what, w, ops, rows)
		}
		if row["ops_per_sec"].(float64) <= 0 {
			t.Errorf("%s: %s: ops_per_sec %v", what, w, row["ops_per_sec"])
		}
		// MB/s from the value bytes: the reads and the scan got every value.
		if row["mb_per_sec"].(float64) <= 0 {
			t.Errorf("%s: %s read or wrote no value bytes", what, w)
		}
		if w != "randread" && strings.Contains(row["note"].(string), "not found") {
			t.Errorf("%s: %s: %s", what, w, row["note"])
		}
	}
	if !strings.Contains(r.stderr, "seed 7") {
		t.Errorf("%s: stderr does not print the seed:\n%s", what, r.stderr)
	}
}

// gatewayAddr is the dev cluster's Bigtable gateway, from DATA/gateway.addr.
func gatewayAddr(t *testing.T) string {
	t.Helper()
	devCluster(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dev.dir, "gateway.addr"))
		if a := strings.TrimSpace(string(b)); err == nil && a != "" {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev cluster wrote no gateway.addr: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBenchThroughEachAPI(t *testing.T) {
	const rows = 300
	all := []string{"seqwrite", "randwrite", "seqread", "randread", "scan"}
	small := []string{"--rows", "300", "--clients", "3", "--tablets", "3", "--value-size", "100", "--seed", "7", "--output", "json"}
	// Unbatched (one row per call), then batched (bulk calls) into a
	// fresh table.
	runs := [][]string{
		{"--workloads", strings.Join(all, ",")},
		{"--batch", "25", "--workloads", "seqwrite,scan", "--table", "bench-batched"},
	}
	wls := [][]string{all, {"seqwrite", "scan"}}

	t.Run("tabula", func(t *testing.T) {
		for i, run := range runs {
			checkBench(t, "--api tabula "+strings.Join(run, " "), tabula(t, append(append([]string{"bench", "--api", "tabula", "--table", "bench-native"}, small...), run...)...), rows, wls[i]...)
		}
	})
	t.Run("bigtable", func(t *testing.T) {
		if secureAll() {
			t.Skip("tabula dev --auth starts no gateway")
		}
		addr := gatewayAddr(t)
		for i, run := range runs {
			checkBench(t, "--api bigtable "+strings.Join(run, " "), tabula(t, append(append([]string{"bench", "--api", "bigtable", "--bigtable-addr", addr, "--table", "bench-gw"}, small...), run...)...), rows, wls[i]...)
		}
		// Created through the Bigtable admin API with the pre-splits, and
		// deleted at the end unless --keep.
		if strings.Contains(ok(t, "table", "list"), "bench-gw") {
			t.Errorf("bench through the gateway left its table behind")
		}
		checkBench(t, "--api bigtable --keep", tabula(t, append([]string{"bench", "--api", "bigtable", "--bigtable-addr", addr, "--table", "bench-gw-kept", "--keep", "--workloads", "seqwrite"}, small...)...), rows, "seqwrite")
		if n := waitTabletsAssigned(t, "bench-gw-kept"); n != 3 {
			t.Errorf("the bench table created through the gateway has %d tablets, want 3 (--tablets 3)", n)
		}
		ok(t, "table", "delete", "bench-gw-kept")
	})
	t.Run("emulator", func(t *testing.T) {
		// In process: no cluster, no master.
		for i, run := range runs {
			r := tabulaEnv(t, []string{"TABULA_MASTER="}, append(append([]string{"bench", "--api", "emulator"}, small...), run...)...)
			checkBench(t, "--api emulator "+strings.Join(run, " "), r, rows, wls[i]...)
			if !strings.Contains(r.stderr, "in-process emulator (in memory, not durable)") {
				t.Errorf("--api emulator does not say what it measures:\n%s", r.stderr)
			}
		}
	})
	t.Run("unknown", func(t *testing.T) {
		r := tabulaEnv(t, nil, "bench", "--api", "cassandra")
		if r.code == 0 || !strings.Contains(r.stderr, "tabula, bigtable or emulator") {
			t.Errorf("--api cassandra: exit %d, stderr %q; want an error naming the choices", r.code, r.stderr)
		}
	})
}
