package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// TestMeasureTabletServersAtScale measures REAL tablet servers (`tabula
// tabletserver` processes) in a cluster of many tablets (docs/BENCHMARKS.md
// "Real tablet servers at 100,000 tablets"): etcd and the master are
// processes, the bulk of the tablets is held by simulated servers in this
// process (as in TestMeasureMasterIdle), and TSSCALE_REAL real servers
// (2) join once every tablet is loaded, the automatic balancer off. It
// reports for each real server: how long it took to register and what
// it read and spent in its first 10 s; its CPU while idle; what it read
// and spent while TSSCALE_CHANGES (5,000) tablet records of simulated
// servers change (not its own), per etcd revision; then a
// simulated server is killed and the time until its tablets are loaded
// again, most of them by the real servers (the least loaded), with their
// CPU.
//
// Skipped unless TSSCALE_MEASURE is the number of tablets (tables of
// 100). TSSCALE_SERVERS (10 simulated), TSSCALE_IDLE (30s), TSSCALE_BIN
// (the tabula binary for etcd, the master and the real servers, to
// compare an older build; default: the one built from this tree),
// TSSCALE_LOGS (a directory to copy the processes' logs into),
// TSSCALE_PROFILE (a directory: the master and the real servers serve
// /debug/pprof/ and their CPU profiles while the dead server's tablets
// are handed on are written there, 5 s each, to merge with `go tool
// pprof`). Run it
// alone: `go test ./e2e/ -run TestMeasureTabletServersAtScale -v -timeout
// 60m`.
func TestMeasureTabletServersAtScale(t *testing.T) {
	nTablets, _ := strconv.Atoi(os.Getenv("TSSCALE_MEASURE"))
	if nTablets <= 0 {
		t.Skip("TSSCALE_MEASURE=tablets runs this measurement")
	}
	useBinary(t, "TSSCALE_BIN")
	nSims, nReal := envInt("TSSCALE_SERVERS", 10), envInt("TSSCALE_REAL", 2)
	nChanges := envInt("TSSCALE_CHANGES", 5000)
	idle := envDuration(t, "TSSCALE_IDLE", 30*time.Second)
	profDir := os.Getenv("TSSCALE_PROFILE")
	const serverTTL = 10 * time.Second
	ctx := context.Background()

	dir := t.TempDir()
	masterArgs := []string{"--balance-interval", "0"}
	masterHTTP := ""
	if profDir != "" {
		masterHTTP = freeAddr(t)
		masterArgs = append(masterArgs, "--http", masterHTTP, "--metrics=false", "--pprof")
	}
	c := startSimCluster(t, dir, nSims, serverTTL, nil, masterArgs...)
	c.master.httpAddr = masterHTTP
	cli, etcdAddr, layout, sims := c.cli, c.etcdAddr, c.layout, c.sims
	n, took := c.createLoaded(t, nTablets)
	t.Logf("%d tablets on %d simulated servers created and loaded in %v", n, nSims, took.Round(time.Millisecond))

	// The real servers join.
	reals := make([]*proc, nReal)
	for i := range reals {
		id := fmt.Sprintf("real-%d", i)
		p := &proc{name: id, id: id, addr: freeAddr(t), log: filepath.Join(dir, "logs", id+".log")}
		p.args = []string{"tabletserver", "--etcd", etcdAddr, "--cluster", clusterKey, "--listen", p.addr, "--id", id,
			"--data", filepath.Join(dir, id), "--lease-ttl", serverTTL.String(), "--log-level", "info"}
		if profDir != "" {
			p.httpAddr = freeAddr(t)
			p.args = append(p.args, "--http", p.httpAddr, "--metrics=false", "--pprof")
		}
		began := time.Now()
		p.start(t)
		t.Cleanup(p.kill)
		waitUntil(t, readyWait, func() (bool, string) {
			r, err := cli.Get(ctx, layout.ServerKey(id))
			return err == nil && len(r.Kvs) == 1, fmt.Sprintf("%s registered: %v", id, err)
		})
		registered := time.Since(began)
		time.Sleep(10*time.Second - registered)
		t.Logf("%s: registered %v after its start; first 10 s: CPU %v, read %.1f MB, RSS %s", id,
			registered.Round(time.Millisecond), procCPU(t, p), float64(procRead(t, p))/1e6, procRSS(t, p))
		reals[i] = p
	}

	// Idle: the real servers, and the master and etcd (issue 20: the idle
	// master at most 2 % of a core at 100,000 tablets).
	idleOthers := []*proc{c.master, c.etcd}
	cpu0, read0, idle0 := realsCPU(t, reals), realsRead(t, reals), realsCPU(t, idleOthers)
	time.Sleep(idle)
	cpu1, read1, idle1 := realsCPU(t, reals), realsRead(t, reals), realsCPU(t, idleOthers)
	for i, p := range idleOthers {
		t.Logf("%s idle over %v: CPU %v = %.2f %% of a core", p.name, idle, idle1[i]-idle0[i],
			100*float64(idle1[i]-idle0[i])/float64(idle))
	}
	for i, p := range reals {
		t.Logf("%s idle over %v: CPU %v = %.2f %% of a core, read %.1f KB", p.id, idle, cpu1[i]-cpu0[i],
			100*float64(cpu1[i]-cpu0[i])/float64(idle), float64(read1[i]-read0[i])/1e3)
	}

	// Tablets of simulated servers change (their records rewritten, as
	// a load's state update does: meta.Update, mirrors and all): changes
	// that are not the real servers'.
	var toChange []meta.VersionedTablet
	for k := range sims[1].ids() {
		if len(toChange) == nChanges {
			break
		}
		table, id, _ := strings.Cut(k, "/")
		vt, err := meta.GetTablet(ctx, cli, layout, table, id)
		if err != nil {
			t.Fatal(err)
		}
		toChange = append(toChange, vt)
	}
	st0 := etcdStatus(t, cli, etcdAddr)
	cpu0, read0 = realsCPU(t, reals), realsRead(t, reals)
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(toChange) {
					return
				}
				rec := toChange[i].TabletRecord
				rec.State = meta.StateServing
				if _, err := meta.Update(ctx, cli, layout, toChange[i], rec); err != nil {
					t.Errorf("changing %s/%s: %v", rec.Table, rec.ID, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	moved := time.Since(began)
	time.Sleep(2 * time.Second) // the watches deliver the last changes
	st1 := etcdStatus(t, cli, etcdAddr)
	cpu1, read1 = realsCPU(t, reals), realsRead(t, reals)
	revs := st1.Header.Revision - st0.Header.Revision
	t.Logf("%d tablets of simulated servers changed in %v: %d etcd revisions; etcd database %.1f MiB",
		len(toChange), moved.Round(time.Millisecond), revs, float64(st1.DbSize)/(1<<20))
	for i, p := range reals {
		t.Logf("%s meanwhile: CPU %v, read %.1f KB = %.0f bytes per revision", p.id, cpu1[i]-cpu0[i],
			float64(read1[i]-read0[i])/1e3, float64(read1[i]-read0[i])/float64(revs))
	}

	// A simulated server dies; the real servers, holding the fewest,
	// load most of its tablets.
	dead := sims[0]
	lost := dead.ids()
	cpu0 = realsCPU(t, reals)
	others := []*proc{c.master, c.etcd}
	othersCPU0 := realsCPU(t, others)
	st0 = etcdStatus(t, cli, etcdAddr)
	em0 := etcdMetrics(t, etcdAddr)
	stopProfiles := profileWhile(t, profDir, append([]*proc{c.master}, reals...))
	killed := time.Now()
	dead.kill()
	atLease := c.waitLost(t, dead, lost, killed, func() int {
		n := 0
		for _, p := range reals {
			n += loadedCount(t, p)
		}
		return n
	})
	took = time.Since(killed)
	stopProfiles()
	cpu1 = realsCPU(t, reals)
	othersCPU1 := realsCPU(t, others)
	st1 = etcdStatus(t, cli, etcdAddr)
	em1 := etcdMetrics(t, etcdAddr)
	t.Logf("dead server: %d tablets loaded elsewhere %v after the kill (lease gone after ~%v, ttl %v: %v after it); meanwhile CPU of the master %v, of etcd %v",
		len(lost), took.Round(time.Millisecond), atLease.Round(100*time.Millisecond), serverTTL, (took - atLease).Round(100*time.Millisecond),
		othersCPU1[0]-othersCPU0[0], othersCPU1[1]-othersCPU0[1])
	per := func(name string) string {
		return fmt.Sprintf("%s %.2f", name, (em1[name]-em0[name])/float64(len(lost)))
	}
	t.Logf("etcd per tablet: %s, %s, %s, %s, %s; bytes %s, %s", per("Range"), per("Txn"), per("Put"), per("DeleteRange"),
		per("LeaseGrant"), per("received"), per("sent"))
	t.Logf("the same: %d etcd revisions (%.2f per tablet), etcd database %.1f -> %.1f MiB",
		st1.Header.Revision-st0.Header.Revision, float64(st1.Header.Revision-st0.Header.Revision)/float64(len(lost)),
		float64(st0.DbSize)/(1<<20), float64(st1.DbSize)/(1<<20))
	for i, p := range reals {
		t.Logf("%s: loaded %d of them, CPU %v, RSS %s", p.id, realCount(t, p), cpu1[i]-cpu0[i], procRSS(t, p))
	}
	if keep := os.Getenv("TSSCALE_LOGS"); keep != "" {
		keepLogs(t, filepath.Join(dir, "logs"), keep)
	}
}

// profileWhile writes CPU profiles of processes ps into dir (5 s
// each, one after another) until the returned function is called, which
// waits for the last ones. Nothing when dir is "".
func profileWhile(t *testing.T, dir string, ps []*proc) func() {
	t.Helper()
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get("http://" + p.httpAddr + "/debug/pprof/profile?seconds=5")
				if err != nil {
					t.Errorf("profiling %s: %v", p.name, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s: %s", resp.Status, b)
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%02d.pprof", p.name, i)), b, 0o644)
				}
				if err != nil {
					t.Errorf("profiling %s: %v", p.name, err)
					return
				}
			}
		}()
	}
	return func() {
		close(stop)
		wg.Wait()
	}
}

// etcdMetrics reads the counters of etcd's /metrics (on its client
// port) that say what a phase cost it: requests answered by method
// (Range, Txn, Put, ...) and the bytes its clients sent and received.
func etcdMetrics(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "grpc_server_handled_total{"):
			if _, m, ok := strings.Cut(name, `grpc_method="`); ok {
				m, _, _ = strings.Cut(m, `"`)
				out[m] += v
			}
		case name == "etcd_network_client_grpc_received_bytes_total":
			out["received"] = v
		case name == "etcd_network_client_grpc_sent_bytes_total":
			out["sent"] = v
		}
	}
	return out
}

// keepLogs copies the processes' logs out of the test's directory (which
// is removed at its end) into dst, to read where the time went.
func keepLogs(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Errorf("keeping the logs: %v", err)
	}
}

func realsCPU(t *testing.T, ps []*proc) []time.Duration {
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		out[i] = procCPU(t, p)
	}
	return out
}

func realsRead(t *testing.T, ps []*proc) []int64 {
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = procRead(t, p)
	}
	return out
}

// procRead returns the bytes p has read through system calls so far
// (rchar of /proc/PID/io: its sockets, etcd's answers among them).
func procRead(t *testing.T, p *proc) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/%d/io", p.cmd.Process.Pid)
	return 0
}

// loadedCount counts the tablets a real server has loaded from the lines
// its log has for them (written once a tablet is served). Asking the
// server (realCount) ten times a second is not free: ServerStats builds
// the stats of every tablet it holds, and a caller other than the master
// makes the master's next load report a full one.
func loadedCount(t *testing.T, p *proc) int {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), `msg="loaded tablet"`)
}

// realCount asks a real server how many tablets it serves.
func realCount(t *testing.T, p *proc) int {
	t.Helper()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := tabulapb.NewTabletServerClient(conn).ServerStats(ctx, &tabulapb.ServerStatsRequest{})
	if err != nil {
		return 0
	}
	return max(int(resp.GetTabletCount()), len(resp.GetTablets()))
}
