package tabletserver

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// documented reads the Metrics section of docs/OPERATIONS.md.
func documented(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := metrics.Documented(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkDocumented fails for every tabula_ family of fs that
// docs/OPERATIONS.md does not list with its type.
func checkDocumented(t *testing.T, fs metrics.Families) {
	t.Helper()
	doc := documented(t)
	for _, name := range fs.Tabula() {
		if want, ok := doc[name]; !ok {
			t.Errorf("%s is exported but not documented in docs/OPERATIONS.md", name)
		} else if got := metrics.TypeName(fs[name]); got != want {
			t.Errorf("%s is a %s, documented as a %s", name, got, want)
		}
	}
}

// A tablet server's /metrics has every documented tablet server series,
// and they move with the work done: writes, reads, flushes, a compaction,
// lease renewals; per-tablet series exist for the top N tablets only.
func TestMetricsOfATabletServer(t *testing.T) {
	e := newEnv(t)
	reg := metrics.NewRegistry()
	srv := e.start(func(o *Options) { o.Metrics = reg; o.MetricsTopTablets = 2; o.DisableBackgroundWork = true })
	c := e.dial(srv)
	refs := []*tabulapb.TabletRef{
		e.load(c, e.assign("t1", nil, []byte("g"), srv, 1)),
		e.load(c, e.assign("t2", []byte("g"), []byte("p"), srv, 1)),
		e.load(c, e.assign("t3", []byte("p"), nil, srv, 1)),
	}
	scrape := func() metrics.Families {
		t.Helper()
		fs, err := metrics.Gather(reg)
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	val := func(fs metrics.Families, name string, match map[string]string) float64 {
		t.Helper()
		v, ok := fs.Sum(name, match)
		if !ok {
			t.Fatalf("%s is not exported", name)
		}
		return v
	}
	before := scrape()
	checkDocumented(t, before)
	if n := val(before, "tabula_tabletserver_tablets", nil); n != 3 {
		t.Fatalf("tablets = %v, want 3", n)
	}
	if n := val(before, "tabula_tabletserver_tablet_loads_total", nil); n != 3 {
		t.Fatalf("tablet loads = %v, want 3", n)
	}
	if before.Has("tabula_tabletserver_store_requests_total", nil) {
		t.Fatal("a server on the local disk exports tabula_tabletserver_store_requests_total")
	}
	if n := val(before, "tabula_grpc_server_handled_total", map[string]string{"method": "MutateRow", "code": "OK"}); n != 0 {
		t.Fatalf("MutateRow handled before any write = %v, want a series at 0", n)
	}

	// Tablet t1 gets the most data, t2 some, t3 little: t1 and t2 are the
	// top 2 by size.
	rows := map[int]string{0: "a", 1: "h", 2: "q"}
	count := map[int]int{0: 40, 1: 20, 2: 2}
	for round := range 2 {
		for i, ref := range refs {
			for j := range count[i] {
				if err := put(e.ctx, c, ref, fmt.Sprintf("%s%03d", rows[i], j), set("cf", "q", int64(round+1), string(make([]byte, 500)))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.FlushTablet(e.ctx, ref); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: refs[0], Major: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: refs[0], Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("a001")}}}); err != nil {
		t.Fatal(err)
	}
	// One write left in a memtable, for the memory series.
	if err := put(e.ctx, c, refs[2], "q900", set("cf", "q", 3, string(make([]byte, 500)))); err != nil {
		t.Fatal(err)
	}
	// An unknown tablet: a NotFound-style error counted under its code.
	_, err := c.MutateRow(e.ctx, &tabulapb.MutateRowRequest{Tablet: &tabulapb.TabletRef{Table: "users", TabletId: "nope", Epoch: 1}, RowKey: []byte("a")})
	if err == nil {
		t.Fatal("write to an unknown tablet succeeded")
	}
	eventually(t, 10*time.Second, "a lease renewal counted", func() bool {
		v, _ := scrape().Sum("tabula_tabletserver_lease_renewals_total", map[string]string{"result": "ok"})
		return v >= 1
	})

	after := scrape()
	checkDocumented(t, after)
	writes := float64(2 * (40 + 20 + 2))
	for _, w := range []struct {
		name  string
		match map[string]string
		min   float64
	}{
		{"tabula_grpc_server_handled_total", map[string]string{"service": "tabula.v1.TabletServer", "method": "MutateRow", "code": "OK"}, writes},
		{"tabula_grpc_server_handling_seconds", map[string]string{"method": "MutateRow", "code": "OK"}, writes},
		{"tabula_grpc_server_handled_total", map[string]string{"method": "ReadRows", "code": "OK"}, 1},
		{"tabula_tabletserver_flushes_total", nil, 6},
		{"tabula_tabletserver_flush_duration_seconds", nil, 6},
		{"tabula_tabletserver_flush_bytes_total", nil, writes * 500},
		{"tabula_tabletserver_compactions_total", map[string]string{"kind": "major"}, 1},
		{"tabula_tabletserver_compaction_duration_seconds", map[string]string{"kind": "major"}, 1},
		{"tabula_tabletserver_compaction_bytes_in_total", map[string]string{"kind": "major"}, 2 * 40 * 500},
		{"tabula_tabletserver_compaction_bytes_out_total", map[string]string{"kind": "major"}, 40 * 500},
		{"tabula_tabletserver_commit_log_sync_seconds", nil, 1},
		{"tabula_tabletserver_commit_log_sync_group_size", nil, 1},
		{"tabula_tabletserver_commit_log_bytes_total", nil, writes * 500},
		{"tabula_tabletserver_size_bytes", nil, writes / 2 * 500},
		{"tabula_tabletserver_sstables", nil, 3},
		{"tabula_tabletserver_block_cache_capacity_bytes", nil, 1},
		// The major compaction gave back every block it read.
		{"tabula_tabletserver_decoded_blocks_recycled_total", nil, 1},
		{"tabula_tabletserver_lease_remaining_seconds", nil, 0.001},
		{"tabula_tabletserver_memtable_limit_bytes", map[string]string{"limit": "hard"}, 1},
		{"tabula_tabletserver_memory_bytes", map[string]string{"component": "memtable_active"}, 500},
		// Exported, but 0 once the memtable counts its arena's chunks.
		{"tabula_tabletserver_memory_bytes", map[string]string{"component": "sstable_index_filter"}, 3},
		{"tabula_tabletserver_memory_bytes", map[string]string{"component": "block_cache"}, 1},
	} {
		if v := val(after, w.name, w.match); v < w.min {
			t.Errorf("%s%v = %v, want at least %v", w.name, w.match, v, w.min)
		}
	}
	if _, ok := after.Sum("tabula_tabletserver_offheap_bytes", nil); !ok {
		t.Error("tabula_tabletserver_offheap_bytes is not exported")
	}
	if v := val(after, "tabula_grpc_server_handled_total", map[string]string{"method": "MutateRow"}) - val(after, "tabula_grpc_server_handled_total", map[string]string{"method": "MutateRow", "code": "OK"}); v != 1 {
		t.Errorf("failed MutateRow calls counted %v times, want 1", v)
	}
	if active, flushing, budget := val(after, "tabula_tabletserver_memory_bytes", map[string]string{"component": "memtable_active"}),
		val(after, "tabula_tabletserver_memory_bytes", map[string]string{"component": "memtable_flushing"}),
		val(after, "tabula_tabletserver_memtable_bytes", nil); active+flushing != budget {
		t.Errorf("memory_bytes of the memtables: active %v + flushing %v, want the budget's %v", active, flushing, budget)
	}
	// The writers of flushes and compactions in flight: none is left.
	if v, ok := after.Sum("tabula_tabletserver_memory_bytes", map[string]string{"component": "sstable_writers"}); !ok || v != 0 {
		t.Errorf("memory_bytes of the SSTable writers: %v (exported: %v), want 0 with none in flight", v, ok)
	}
	hits, misses := val(after, "tabula_tabletserver_block_cache_hits_total", nil), val(after, "tabula_tabletserver_block_cache_misses_total", nil)
	if hits+misses == 0 {
		t.Error("a read from SSTables made no block cache lookups")
	}
	// Top 2 by size: t1 and t2, not t3; every value each. No load window
	// has closed yet, so none is among the busiest.
	for _, name := range []string{"tabula_tablet_size_bytes", "tabula_tablet_memtable_bytes", "tabula_tablet_sstables", "tabula_tablet_compaction_backlog",
		"tabula_tablet_write_stall_seconds", "tabula_tablet_reads_per_second", "tabula_tablet_writes_per_second", "tabula_tablet_busy_ratio"} {
		mf := after[name]
		if mf == nil || len(mf.GetMetric()) != 2 {
			t.Fatalf("%s: %v series, want 2 (top 2 tablets)", name, mf)
		}
	}
	for id, want := range map[string]bool{"t1": true, "t2": true, "t3": false} {
		if v, _ := after.Sum("tabula_tablet_size_bytes", map[string]string{"table": "users", "tablet": id}); (v > 0) != want {
			t.Errorf("tablet %s in the top 2: %v, want %v", id, v > 0, want)
		}
	}

	// A window in which only the small t3 is read: it joins the series as
	// one of the 2 busiest, with its read rate.
	begin := time.Now()
	srv.rollLoad(begin)
	for range 50 {
		if _, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: refs[2], Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("q001")}}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.rollLoad(begin.Add(10 * time.Second))
	busy := scrape()
	if mf := busy["tabula_tablet_size_bytes"]; mf == nil || len(mf.GetMetric()) != 3 {
		t.Fatalf("after t3's busy window: %v, want 3 tablets (2 largest, t3 busiest)", mf)
	}
	if v, _ := busy.Sum("tabula_tablet_reads_per_second", map[string]string{"table": "users", "tablet": "t3"}); v != 5 {
		t.Errorf("t3 reads/s = %v, want 50 reads / 10 s = 5", v)
	}

	// Write stalls come as engine events (none above: no background
	// flushes); each counts once with its time.
	if v := val(after, "tabula_tabletserver_write_stalls_total", nil); v != 0 {
		t.Errorf("write stalls = %v before any, want 0", v)
	}
	for _, d := range []time.Duration{time.Second, 500 * time.Millisecond} {
		srv.metrics.events.WriteStalled(tablet.WriteStallEvent{Duration: d})
	}
	stalls := scrape()
	if n, secs := val(stalls, "tabula_tabletserver_write_stalls_total", nil), val(stalls, "tabula_tabletserver_write_stall_seconds_total", nil); n != 2 || secs != 1.5 {
		t.Errorf("after two stalls of 1 s and 0.5 s: write_stalls_total %v, write_stall_seconds_total %v; want 2 and 1.5", n, secs)
	}

	// Close takes the series back: a new server in this process can
	// register them again.
	srv.Close()
	for _, name := range after.Tabula() {
		if _, ok := scrape()[name]; ok {
			t.Errorf("%s still exported after Close", name)
		}
	}
}

// Without Options.Metrics nothing is installed: the engine gets no
// events and the shared log no sync callback.
func TestNoMetricsInstallsNothing(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	if srv.metrics != nil || srv.engineOptions(t.TempDir(), nil, nil, nil, 1).Events != nil || srv.metrics.onSync() != nil || srv.metrics.grpcOptions() != nil {
		t.Fatal("metrics off, yet instrumentation installed")
	}
}
