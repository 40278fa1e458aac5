package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/metrics"
)

// scrape reads and parses http://addr/metrics.
func scrape(t *testing.T, addr string) metrics.Families {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s", addr, resp.Status)
	}
	fs, err := metrics.Parse(resp.Body)
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	return fs
}

// documentedMetrics reads the Metrics section of docs/OPERATIONS.md.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "docs", "OPERATIONS.md"))
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

// sum is fs.Sum that fails when the family is missing.
func sum(t *testing.T, what string, fs metrics.Families, name string, match map[string]string) float64 {
	t.Helper()
	v, ok := fs.Sum(name, match)
	if !ok {
		t.Fatalf("%s: %s is not exported", what, name)
	}
	return v
}

// TestMetricsEndpoints: real master, tablet server (on an object store)
// and gateway processes with --http serve /metrics; together they export exactly the series
// docs/OPERATIONS.md documents (with their types), plus the Go runtime
// and process ones on each; and the load-dependent series move when rows
// are written and read and the table is flushed and compacted through the
// admin API.
func TestMetricsEndpoints(t *testing.T) {
	if secureAll() {
		t.Skip("the gateway needs a plaintext cluster; the secure master's and server's /metrics are the same code")
	}
	httpM, httpS, httpG := freeAddr(t), freeAddr(t), freeAddr(t)
	// On an object store: the store's request counters are exported only
	// there, and are documented like every other series.
	c := startCluster(t, clusterOptions{masters: 1, servers: 1, objectStore: true,
		masterArgs: []string{"--http", httpM}, serverArgs: []string{"--http", httpS}})
	gwAddr := freeAddr(t)
	gw := &proc{name: "gateway", addr: gwAddr, log: c.logPath("gateway"),
		args: []string{"gateway", "--master", c.masterAddrs()[0], "--listen", gwAddr, "--http", httpG}}
	gw.start(t)
	t.Cleanup(func() {
		gw.kill()
		if t.Failed() {
			t.Logf("---- log of the gateway ----\n%s", gw.tail(40))
		}
	})
	for _, a := range []string{httpM, httpS, httpG} {
		waitHTTP(t, "http://"+a+"/readyz", readyWait)
	}
	kinds := map[string]string{"master": httpM, "tabletserver": httpS, "gateway": httpG}
	prefix := map[string]string{"master": "tabula_master_", "tabletserver": "tabula_tabletserver_", "gateway": "tabula_grpc_"}

	cl := c.newClient(t)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	if err := cl.Admin().CreateTable(ctx, "m", []families.Family{families.Default(famA), families.Default(famB)}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	tbl := cl.Open("m")
	if _, err := tbl.ReadRow(ctx, []byte("a")); err != nil { // waits until served
		t.Fatal(err)
	}
	before := map[string]metrics.Families{}
	for k, a := range kinds {
		before[k] = scrape(t, a)
	}
	// Two rounds of writes, each flushed by a major compaction (which
	// flushes first): the second finds two files per family to merge.
	const rows = 200
	for i := range rows {
		row := fmt.Sprintf("%c%04d", "ct"[i%2], i)
		if err := tbl.Apply(ctx, []byte(row), rowMutation(row)); err != nil {
			t.Fatalf("Apply(%s): %v", row, err)
		}
		if i == rows/2 || i == rows-1 {
			if err := cl.Admin().CompactTable(ctx, "m", true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := len(scanAll(t, tbl)); got != rows {
		t.Fatalf("scan read %d rows, want %d", got, rows)
	}
	// One call through the gateway with the official client.
	conn, err := grpc.NewClient(gwAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	bt, err := bigtable.NewClientWithConfig(ctx, "p", "i", bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	if r, err := bt.Open("m").ReadRow(ctx, "c0000"); err != nil || len(r) == 0 {
		t.Fatalf("ReadRow through the gateway: %v, %v", r, err)
	}

	// A quota of one read a second on the table: the throttled-requests
	// series exists only once the server refused a call. The reads wait
	// for the server to follow the quota from etcd; a refused read ends
	// at its own short deadline (the client retries only within it).
	if err := meta.PutQuota(ctx, c.etcdClient(t), meta.NewLayout(clusterKey), "table", "m", meta.QuotaRecord{ReadRequests: 1}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(opTimeout); ; {
		rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _ = tbl.ReadRow(rctx, []byte("c0000"))
		rcancel()
		if _, ok := scrape(t, httpS)["tabula_tabletserver_throttled_requests_total"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no read was refused under a quota of one read a second")
		}
	}

	after := map[string]metrics.Families{}
	exported := map[string]string{}
	for k, a := range kinds {
		after[k] = scrape(t, a)
		for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
			if _, ok := after[k][name]; !ok {
				t.Errorf("%s: %s is not exported", k, name)
			}
		}
		for _, name := range after[k].Tabula() {
			exported[name] = metrics.TypeName(after[k][name])
			if !strings.HasPrefix(name, prefix[k]) && !strings.HasPrefix(name, "tabula_grpc_") && !(k == "tabletserver" && strings.HasPrefix(name, "tabula_tablet_")) {
				t.Errorf("%s exports %s, another kind's series", k, name)
			}
		}
	}
	doc := documentedMetrics(t)
	for name, typ := range doc {
		if got, ok := exported[name]; !ok {
			t.Errorf("%s is documented but no process exports it", name)
		} else if got != typ {
			t.Errorf("%s is a %s, documented as a %s", name, got, typ)
		}
	}
	for name := range exported {
		if _, ok := doc[name]; !ok {
			t.Errorf("%s is exported but not documented in docs/OPERATIONS.md", name)
		}
	}

	// The load moved what it should.
	grew := func(kind, name string, match map[string]string, min float64) {
		t.Helper()
		b := sum(t, kind, before[kind], name, match)
		a := sum(t, kind, after[kind], name, match)
		if a-b < min {
			t.Errorf("%s %s%v went from %v to %v, want it up by at least %v", kind, name, match, b, a, min)
		}
	}
	grew("tabletserver", "tabula_grpc_server_handled_total", map[string]string{"method": "MutateRow", "code": "OK"}, rows)
	grew("tabletserver", "tabula_grpc_server_handling_seconds", map[string]string{"method": "MutateRow"}, rows)
	grew("tabletserver", "tabula_grpc_server_handled_total", map[string]string{"method": "ReadRows", "code": "OK"}, 1)
	grew("tabletserver", "tabula_tabletserver_flushes_total", nil, 2)
	grew("tabletserver", "tabula_tabletserver_flush_bytes_total", nil, 1)
	grew("tabletserver", "tabula_tabletserver_compactions_total", map[string]string{"kind": "major"}, 2)
	grew("tabletserver", "tabula_tabletserver_compaction_duration_seconds", map[string]string{"kind": "major"}, 2)
	grew("tabletserver", "tabula_tabletserver_commit_log_sync_seconds", nil, 1)
	grew("tabletserver", "tabula_tabletserver_commit_log_sync_group_size", nil, 1)
	grew("tabletserver", "tabula_tabletserver_commit_log_bytes_total", nil, 1)
	grew("tabletserver", "tabula_tabletserver_size_bytes", nil, 1)
	grew("tabletserver", "tabula_tabletserver_sstables", nil, 2)
	grew("tabletserver", "tabula_tablet_size_bytes", map[string]string{"table": "m"}, 1)
	grew("tabletserver", "tabula_tabletserver_store_requests_total", map[string]string{"kind": "put"}, 2) // the flushes' files at least
	grew("master", "tabula_grpc_server_handled_total", map[string]string{"method": "CompactTable", "code": "OK"}, 1)
	grew("gateway", "tabula_grpc_server_handled_total", map[string]string{"service": "google.bigtable.v2.Bigtable", "method": "ReadRows", "code": "OK"}, 1)
	if v := sum(t, "tabletserver", after["tabletserver"], "tabula_tabletserver_block_cache_hits_total", nil) +
		sum(t, "tabletserver", after["tabletserver"], "tabula_tabletserver_block_cache_misses_total", nil); v == 0 {
		t.Error("the scan made no block cache lookups")
	}
	if v := sum(t, "tabletserver", after["tabletserver"], "tabula_tabletserver_tablets", nil); v != 2 {
		t.Errorf("tablets served = %v, want 2", v)
	}
	if v := sum(t, "tabletserver", after["tabletserver"], "tabula_tabletserver_lease_remaining_seconds", nil); v <= 0 {
		t.Errorf("lease remaining = %v, want > 0", v)
	}
	if v := sum(t, "master", after["master"], "tabula_master_leader", nil); v != 1 {
		t.Errorf("master leader = %v, want 1", v)
	}
	if v := sum(t, "master", after["master"], "tabula_master_tablets", nil); v != 2 {
		t.Errorf("master tablets = %v, want 2", v)
	}
}

// TestDevMetrics: `tabula dev` serves one /metrics for the whole process:
// every component's series carry server="master", "ts-N" or "gateway",
// the Go runtime ones appear once, and the tablet servers' series move
// under load.
func TestDevMetrics(t *testing.T) {
	d := newDevProc(t)
	addr := d.startDev(t)
	var httpAddr string
	deadline := time.Now().Add(readyWait)
	for httpAddr == "" && time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(d.data, "http.addr")); err == nil {
			httpAddr = strings.TrimSpace(string(b))
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitHTTP(t, "http://"+httpAddr+"/readyz", readyWait)
	cl := d.devClient(t, addr)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	if err := cl.Admin().CreateTable(ctx, "dm", []families.Family{families.Default(famA), families.Default(famB)}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	tbl := cl.Open("dm")
	waitServing(t, cl, "dm")
	before := scrape(t, httpAddr)
	var rows []string
	for _, prefix := range []string{"m1", "m2"} { // two flushes, then a merge
		rows = append(rows, writeDevRows(t, tbl, prefix, 50)...)
		if err := cl.Admin().CompactTable(ctx, "dm", true); err != nil {
			t.Fatal(err)
		}
	}
	checkDevRows(t, tbl, rows)
	after := scrape(t, httpAddr)

	servers := map[string]bool{}
	for _, m := range after["tabula_grpc_server_handled_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == metrics.ServerLabel {
				servers[lp.GetValue()] = true
			}
		}
	}
	want := []string{"master", "ts-1", "ts-2"}
	if !secureAll() {
		want = append(want, "gateway")
	}
	for _, s := range want {
		if !servers[s] {
			t.Errorf("no gRPC series with server=%q; servers seen: %v", s, servers)
		}
	}
	for _, s := range []string{"ts-1", "ts-2"} {
		if !after.Has("tabula_tabletserver_tablets", map[string]string{"server": s}) {
			t.Errorf("no tabula_tabletserver_tablets for %s", s)
		}
	}
	if v, _ := after.Sum("tabula_master_leader", map[string]string{"server": "master"}); v != 1 {
		t.Errorf("tabula_master_leader{server=master} = %v, want 1", v)
	}
	if mf := after["go_goroutines"]; mf == nil || len(mf.GetMetric()) != 1 {
		t.Errorf("go_goroutines: %v, want one series for the process", mf)
	}
	doc := documentedMetrics(t)
	var undocumented []string
	for _, name := range after.Tabula() {
		if _, ok := doc[name]; !ok {
			undocumented = append(undocumented, name)
		}
	}
	slices.Sort(undocumented)
	if len(undocumented) > 0 {
		t.Errorf("exported but not documented: %v", undocumented)
	}
	for _, w := range []struct {
		name  string
		match map[string]string
		min   float64
	}{
		{"tabula_grpc_server_handled_total", map[string]string{"service": "tabula.v1.TabletServer", "method": "MutateRow", "code": "OK"}, float64(len(rows))},
		{"tabula_tabletserver_flushes_total", nil, 2},
		{"tabula_tabletserver_compactions_total", map[string]string{"kind": "major"}, 2},
		{"tabula_tabletserver_commit_log_sync_seconds", nil, 1},
	} {
		b, _ := before.Sum(w.name, w.match)
		a, _ := after.Sum(w.name, w.match)
		if a-b < w.min {
			t.Errorf("%s%v went from %v to %v, want it up by at least %v", w.name, w.match, b, a, w.min)
		}
	}
}
