package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
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
// and spent while TSSCALE_MOVES (2,000) tablets move between simulated
// servers (changes that are not its own), per etcd revision; then a
// simulated server is killed and the time until its tablets are loaded
// again, most of them by the real servers (the least loaded), with their
// CPU.
//
// Skipped unless TSSCALE_MEASURE is the number of tablets (tables of
// 100). TSSCALE_SERVERS (10 simulated), TSSCALE_IDLE (30s), TSSCALE_BIN
// (the tabula binary for etcd, the master and the real servers, to
// compare an older build; default: the one built from this tree). Run it
// alone: `go test ./e2e/ -run TestMeasureTabletServersAtScale -v -timeout
// 60m`.
func TestMeasureTabletServersAtScale(t *testing.T) {
	nTablets, _ := strconv.Atoi(os.Getenv("TSSCALE_MEASURE"))
	if nTablets <= 0 {
		t.Skip("TSSCALE_MEASURE=tablets runs this measurement")
	}
	if b := os.Getenv("TSSCALE_BIN"); b != "" {
		old := binPath
		binPath = b
		t.Cleanup(func() { binPath = old })
	} else if binErr != nil {
		t.Fatal(binErr)
	}
	nSims, nReal := envInt("TSSCALE_SERVERS", 10), envInt("TSSCALE_REAL", 2)
	nMoves := envInt("TSSCALE_MOVES", 2000)
	idle := envDuration(t, "TSSCALE_IDLE", 30*time.Second)
	const serverTTL = 10 * time.Second
	ctx := context.Background()

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	etcdAddr := freeAddr(t)
	etcd := &proc{name: "etcd", addr: etcdAddr, log: filepath.Join(dir, "logs", "etcd.log"),
		args: []string{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client", etcdAddr, "--listen-peer", freeAddr(t), "--unsafe-no-fsync"}}
	etcd.start(t)
	t.Cleanup(etcd.kill)
	waitListening(t, etcd, readyWait)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	layout := meta.NewLayout(clusterKey)
	sims := make([]*simServer, nSims)
	for i := range sims {
		sims[i] = startSimServer(t, cli, layout, fmt.Sprintf("sim-%02d", i), serverTTL)
	}
	master := &proc{name: "master", addr: freeAddr(t), log: filepath.Join(dir, "logs", "master.log")}
	master.args = []string{"master", "--etcd", etcdAddr, "--cluster", clusterKey, "--listen", master.addr, "--id", "master-1",
		"--balance-interval", "0", "--log-level", "info"}
	master.start(t)
	t.Cleanup(master.kill)
	waitListening(t, master, readyWait)
	conn, err := grpc.NewClient(master.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	mc := tabulapb.NewMasterClient(conn)
	waitUntil(t, readyWait, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.GetServers()) == nSims, fmt.Sprintf("servers listed: %v %v", len(ss.GetServers()), err)
	})
	start := time.Now()
	tables := (nTablets + 99) / 100
	createTablesOf100(t, mc, tables)
	waitUntil(t, 30*time.Minute, func() (bool, string) {
		n := 0
		for _, s := range sims {
			n += s.count()
		}
		return n == tables*100, fmt.Sprintf("%d of %d tablets loaded", n, tables*100)
	})
	t.Logf("%d tablets on %d simulated servers created and loaded in %v", tables*100, nSims, time.Since(start).Round(time.Millisecond))

	// The real servers join.
	reals := make([]*proc, nReal)
	for i := range reals {
		id := fmt.Sprintf("real-%d", i)
		p := &proc{name: id, id: id, addr: freeAddr(t), log: filepath.Join(dir, "logs", id+".log")}
		p.args = []string{"tabletserver", "--etcd", etcdAddr, "--cluster", clusterKey, "--listen", p.addr, "--id", id,
			"--data", filepath.Join(dir, id), "--lease-ttl", serverTTL.String(), "--log-level", "info"}
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

	// Idle.
	cpu0, read0 := realsCPU(t, reals), realsRead(t, reals)
	time.Sleep(idle)
	cpu1, read1 := realsCPU(t, reals), realsRead(t, reals)
	for i, p := range reals {
		t.Logf("%s idle over %v: CPU %v = %.2f %% of a core, read %.1f KB", p.id, idle, cpu1[i]-cpu0[i],
			100*float64(cpu1[i]-cpu0[i])/float64(idle), float64(read1[i]-read0[i])/1e3)
	}

	// Tablets move between simulated servers: changes that are not the
	// real servers'.
	var toMove []string // table/id held by sims[1]
	for k := range sims[1].ids() {
		if len(toMove) == nMoves {
			break
		}
		toMove = append(toMove, k)
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
				if i >= len(toMove) {
					return
				}
				table, id, _ := strings.Cut(toMove[i], "/")
				if _, err := mc.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: table, TabletId: id, ServerId: sims[2+i%(nSims-2)].id}); err != nil {
					t.Errorf("moving %s: %v", toMove[i], err)
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
	t.Logf("%d tablets moved between simulated servers in %v: %d etcd revisions", len(toMove), moved.Round(time.Millisecond), revs)
	for i, p := range reals {
		t.Logf("%s meanwhile: CPU %v, read %.1f KB = %.0f bytes per revision", p.id, cpu1[i]-cpu0[i],
			float64(read1[i]-read0[i])/1e3, float64(read1[i]-read0[i])/float64(revs))
	}

	// A simulated server dies; the real servers, holding the fewest,
	// load most of its tablets.
	dead := sims[0]
	lost := dead.ids()
	cpu0 = realsCPU(t, reals)
	killed := time.Now()
	dead.kill()
	var atLease time.Duration
	waitUntil(t, 20*time.Minute, func() (bool, string) {
		if atLease == 0 {
			if r, _ := cli.Get(ctx, layout.ServerKey(dead.id)); r != nil && len(r.Kvs) == 0 {
				atLease = time.Since(killed)
			}
		}
		n := 0
		for _, s := range sims[1:] {
			n += s.countOf(lost)
		}
		for _, p := range reals {
			n += realCount(t, p)
		}
		return n == len(lost), fmt.Sprintf("%d of the dead server's %d tablets loaded elsewhere", n, len(lost))
	})
	took := time.Since(killed)
	cpu1 = realsCPU(t, reals)
	t.Logf("dead server: %d tablets loaded elsewhere %v after the kill (lease gone after ~%v, ttl %v)",
		len(lost), took.Round(time.Millisecond), atLease.Round(100*time.Millisecond), serverTTL)
	for i, p := range reals {
		t.Logf("%s: loaded %d of them, CPU %v, RSS %s", p.id, realCount(t, p), cpu1[i]-cpu0[i], procRSS(t, p))
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
