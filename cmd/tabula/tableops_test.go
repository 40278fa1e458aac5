package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tabletsOf lists a table's tablets as `table tablets -o json` prints them.
func tabletsOf(t *testing.T, table string) []map[string]any {
	t.Helper()
	return jsonCells(t, ok(t, "table", "tablets", table, "-o", "json"))
}

// sstablesOf counts the SSTable files in the dev cluster's storage whose
// path holds the tablet id.
func sstablesOf(t *testing.T, id string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dev.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".sst") && strings.Contains(p, id) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCLITableOps runs table flush, table split at a size midpoint (the
// only tablet, --tablet, --holding) and at a row, and table describe's
// units, split threshold and tablet sizes against the dev cluster, then
// their bad input.
func TestCLITableOps(t *testing.T) {
	ok(t, "table", "create", "ops", "--family", "a:blocksize=1k", "--family", "b:ttl=30d", "--family", "c:ttl=36h",
		"--family", "d:gc=union(versions=3,age=90m)")
	waitTabletsAssigned(t, "ops")
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, `{"row":"r%03d","family":"a","qualifier":"q","timestamp":1000,"value":"%s"}`+"\n", i, strings.Repeat("v", 200))
	}
	file := filepath.Join(t.TempDir(), "ops.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, "import", "ops", "--file", file)

	t.Run("flush", func(t *testing.T) {
		id := tabletsOf(t, "ops")[0]["id"].(string)
		if n := sstablesOf(t, id); n != 0 {
			t.Fatalf("tablet %s has %d SSTables before the flush, want 0 (the test needs the rows in the memtable)", id, n)
		}
		if out := ok(t, "table", "flush", "ops"); out != "flushed ops\n" {
			t.Errorf("table flush printed %q", out)
		}
		if n := sstablesOf(t, id); n == 0 {
			t.Errorf("tablet %s has no SSTable after table flush", id)
		}
		if out := ok(t, "table", "flush", "ops", "-o", "json"); out != `{"flushed":"ops"}`+"\n" {
			t.Errorf("table flush -o json printed %q", out)
		}
	})

	t.Run("describe", func(t *testing.T) {
		out := ok(t, "table", "describe", "ops")
		for _, w := range []string{"table ops\n", "split threshold: 256MiB (the cluster's default)\n", "ttl=30d ", "ttl=36h ",
			"gc=union(versions=3,age=90m) ", "tablets: 1, ", "  ID ", "SIZE", "-inf", "+inf"} {
			if !strings.Contains(out, w) {
				t.Errorf("describe lacks %q:\n%s", w, out)
			}
		}
		// The size comes from the leader's load report (every 500ms here).
		deadline := time.Now().Add(30 * time.Second)
		for {
			var d struct {
				SplitThresholdInForce int64            `json:"split_threshold_in_force"`
				TabletList            []map[string]any `json:"tablet_list"`
				Families              []map[string]any `json:"families"`
			}
			out := ok(t, "table", "describe", "ops", "-o", "json")
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("describe -o json: %v\n%s", err, out)
			}
			if d.SplitThresholdInForce != 256<<20 || len(d.TabletList) != 1 || d.Families[1]["ttl"] != "30d" {
				t.Fatalf("describe -o json: %s", out)
			}
			if size := d.TabletList[0]["size_bytes"].(float64); size > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("describe shows no tablet size after 30s: %s", out)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if out := ok(t, "table", "describe", "ops"); strings.Contains(out, "tablets: 1, 0B") {
			t.Errorf("describe text shows no size:\n%s", out)
		}
	})

	t.Run("split at the size midpoint", func(t *testing.T) {
		out := ok(t, "table", "split", "ops")
		var at int
		if _, err := fmt.Sscanf(out, "split ops at r%03d (its size midpoint)", &at); err != nil || at < 25 || at > 75 {
			t.Fatalf("split printed %q; want a midpoint row near r050", out)
		}
		waitTabletsAssigned(t, "ops")
		r := fails(t, []string{"table", "split", "ops"}, "table ops has several tablets; name one with --tablet ID (`tabula table tablets ops` lists them) or --holding ROW, split them all with --all")
		if r.code != 1 {
			t.Errorf("split of a table of several tablets: exit %d, want 1", r.code)
		}
		ok(t, "table", "split", "ops", "--holding", "r001")
		waitTabletsAssigned(t, "ops")
		ts := tabletsOf(t, "ops")
		if len(ts) != 3 {
			t.Fatalf("%d tablets after two midpoint splits, want 3", len(ts))
		}
		last := ts[2]["id"].(string)
		var j map[string]any
		if err := json.Unmarshal([]byte(ok(t, "table", "split", "ops", "--tablet", last, "-o", "json")), &j); err != nil || j["left"] == nil || j["right"] == nil {
			t.Fatalf("split --tablet -o json: %v %v", j, err)
		}
		waitTabletsAssigned(t, "ops")
		ok(t, "table", "split", "ops", "r099") // at a row, as before
		waitTabletsAssigned(t, "ops")
		if n := len(tabletsOf(t, "ops")); n != 5 {
			t.Errorf("%d tablets after four splits, want 5", n)
		}
		if got := strings.TrimSpace(ok(t, "count", "ops")); got != "100" {
			t.Errorf("count after the splits = %s, want 100", got)
		}
		// --all: every tablet at its midpoint; [r099, +inf) holds one row
		// and is left.
		out = ok(t, "table", "split", "ops", "--all")
		var n, of, small int
		if _, err := fmt.Sscanf(out, "split %d of %d tablet(s) of ops at their size midpoints; %d too small to split", &n, &of, &small); err != nil || of != 5 || small < 1 || n+small != 5 || n < 1 {
			t.Errorf("split --all printed %q", out)
		}
		waitTabletsAssigned(t, "ops")
		if got := len(tabletsOf(t, "ops")); got != 5+n {
			t.Errorf("%d tablets after split --all split %d of 5, want %d", got, n, 5+n)
		}
		if got := strings.TrimSpace(ok(t, "count", "ops")); got != "100" {
			t.Errorf("count after split --all = %s, want 100", got)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		ok(t, "table", "create", "tiny", "--family", "a")
		waitTabletsAssigned(t, "tiny")
		ok(t, "put", "tiny", "only", "a:q=1")
		for _, c := range []struct {
			args []string
			want []string
			hint string
		}{
			{[]string{"table", "split", "tiny"}, []string{"holds too little data to have a size midpoint", "tabula table split tiny ROW"}, "hint: fix the argument"},
			{[]string{"table", "split", "ops", "--tablet", "nope"}, []string{"table ops has no tablet nope"}, "hint: check the names"},
			{[]string{"table", "split", "ops", "m", "--tablet", "x"}, []string{"give ROW to split at it, or --tablet / --holding"}, "hint: fix the argument"},
			{[]string{"table", "split", "ops", "--tablet", "x", "--holding", "m"}, []string{"give --tablet ID or --holding ROW, not both"}, "hint: fix the argument"},
			{[]string{"table", "split", "ops", "m", "--all"}, []string{"--all splits every tablet; give it without ROW, --tablet or --holding"}, "hint: fix the argument"},
			{[]string{"table", "flush", "missing"}, []string{"flushing missing"}, "hint: check the names"},
		} {
			r := fails(t, c.args, append(c.want, c.hint)...)
			if r.code != 1 {
				t.Errorf("tabula %s: exit %d, want 1", strings.Join(c.args, " "), r.code)
			}
		}
		for _, args := range [][]string{{"table", "flush"}, {"table", "flush", "a", "b"}, {"table", "split"}, {"table", "split", "ops", "a", "b"}} {
			if r := fails(t, args, "hint: run `tabula "+strings.Join(args[:2], " ")+" --help` for usage"); r.code != 2 {
				t.Errorf("tabula %s: exit %d, want 2", strings.Join(args, " "), r.code)
			}
		}
		ok(t, "table", "delete", "tiny")
	})
	ok(t, "table", "delete", "ops")
}
