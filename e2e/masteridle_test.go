package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/tabletserver/loadreport"
)

// TestMeasureMasterIdle measures the leading master at many tablets with
// real processes (docs/BENCHMARKS.md "The master at 100,000 tablets, real
// processes"): etcd (`tabula etcd`) and the master (`tabula master`) are
// processes of their own; the tablet servers are simulated in this
// process (they register under an etcd lease as a real server does,
// accept every load and unload, and answer ServerStats with a report as
// big as a real server's, deltas through the real server's
// tabletserver/loadreport). It reports the master's CPU while idle, its
// CPU and the time until a dead server's tablets are loaded elsewhere,
// and etcd's database size and revisions per minute at idle.
//
// Skipped unless MASTERIDLE_MEASURE is the number of tablets (tables of
// 100). MASTERIDLE_SERVERS (10), MASTERIDLE_IDLE (60s: the idle window,
// after a warm-up of MASTERIDLE_WARMUP, 40s), MASTERIDLE_BIN (the tabula
// binary for etcd and the master, to compare an older build; default: the
// one built from this tree). Run it alone: `go test ./e2e/ -run
// TestMeasureMasterIdle -v -timeout 60m`.
func TestMeasureMasterIdle(t *testing.T) {
	nTablets, _ := strconv.Atoi(os.Getenv("MASTERIDLE_MEASURE"))
	if nTablets <= 0 {
		t.Skip("MASTERIDLE_MEASURE=tablets runs this measurement")
	}
	useBinary(t, "MASTERIDLE_BIN")
	nServers := envInt("MASTERIDLE_SERVERS", 10)
	idle := envDuration(t, "MASTERIDLE_IDLE", 60*time.Second)
	warmup := envDuration(t, "MASTERIDLE_WARMUP", 40*time.Second)
	const serverTTL = 10 * time.Second // a real tablet server's default --lease-ttl

	dir := t.TempDir()
	if keepDirs { // E2E_KEEP: keep etcd's data and the master's log
		var err error
		if dir, err = os.MkdirTemp("", "tabula-masteridle-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_KEEP: files in %s", dir)
	}
	// The servers register before the master starts, so its first term
	// sees them all (a server registering as a term starts is the race
	// meta.watchSignal's first signal closes; an older build compared
	// here has that race).
	c := startSimCluster(t, dir, nServers, serverTTL, []string{"GODEBUG=gctrace=1"}) // the master's GC cycles, counted over the idle window
	cli, etcdAddr, servers, master := c.cli, c.etcdAddr, c.sims, c.master

	// Tables of 100 tablets, 8 created at a time.
	cpu0 := procCPU(t, master)
	want, took := c.createLoaded(t, nTablets)
	t.Logf("%d tablets on %d servers created and loaded in %v, master CPU %v", want, nServers, took.Round(time.Millisecond), procCPU(t, master)-cpu0)
	for _, s := range servers {
		t.Logf("  %s: %d tablets", s.id, s.count())
	}

	// Idle: no calls, nothing moving.
	time.Sleep(warmup)
	st0 := etcdStatus(t, cli, etcdAddr)
	gc0 := gcTrace(t, master)
	samples := []time.Duration{}
	prev, t0 := procCPU(t, master), time.Now()
	first := prev
	for time.Since(t0) < idle {
		time.Sleep(time.Second)
		c := procCPU(t, master)
		samples = append(samples, c-prev)
		prev = c
	}
	el := time.Since(t0)
	st1 := etcdStatus(t, cli, etcdAddr)
	gc1 := gcTrace(t, master)
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	t.Logf("idle over %v: master CPU %v = %.2f %% of a core; per second: median %v, p90 %v, max %v; master RSS %s",
		el.Round(time.Millisecond), prev-first, 100*float64(prev-first)/float64(el),
		samples[len(samples)/2], samples[len(samples)*9/10], samples[len(samples)-1], procRSS(t, master))
	t.Logf("idle: %d GC cycles (%d forced), %v of GC worker time (gctrace's cpu: an upper bound), live heap after the last %d MB",
		gc1.cycles-gc0.cycles, gc1.forced-gc0.forced, gc1.cpu-gc0.cpu, gc1.lastHeapMB)
	t.Logf("etcd: database %.1f MiB (in use %.1f MiB), revision %d -> %d: %.1f revisions per minute idle",
		float64(st1.DbSize)/(1<<20), float64(st1.DbSizeInUse)/(1<<20), st0.Header.Revision, st1.Header.Revision,
		float64(st1.Header.Revision-st0.Header.Revision)/el.Minutes())

	// A server dies: its lease expires after serverTTL, the master gives
	// its tablets to the others.
	dead := servers[0]
	lost := dead.ids()
	cpuKill, killed := procCPU(t, master), time.Now()
	dead.kill()
	atLease := c.waitLost(t, dead, lost, killed, nil)
	took = time.Since(killed)
	t.Logf("dead server: %d tablets loaded elsewhere %v after the kill (lease gone after ~%v, ttl %v); master CPU meanwhile %v",
		len(lost), took.Round(time.Millisecond), atLease.Round(100*time.Millisecond), serverTTL, procCPU(t, master)-cpuKill)
}

// useBinary runs the test's processes from the binary the environment
// variable env names (an older build, to compare), else from the one
// built from this tree.
func useBinary(t *testing.T, env string) {
	t.Helper()
	if b := os.Getenv(env); b != "" {
		old := binPath
		binPath = b
		t.Cleanup(func() { binPath = old })
	} else if binErr != nil {
		t.Fatal(binErr)
	}
}

// simCluster is etcd and one master as processes of their own, and
// simulated tablet servers in this process, registered before the master
// starts (TestMeasureMasterIdle, TestMeasureTabletServersAtScale).
type simCluster struct {
	etcdAddr string
	cli      *clientv3.Client
	layout   meta.Layout
	sims     []*simServer
	etcd     *proc
	master   *proc
	mc       tabulapb.MasterClient
}

// startSimCluster starts etcd, nSims simulated servers under leases of
// ttl and the master (its environment and extra flags added), in dir,
// and waits until the master lists every server.
func startSimCluster(t *testing.T, dir string, nSims int, ttl time.Duration, masterEnv []string, masterArgs ...string) *simCluster {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &simCluster{etcdAddr: freeAddr(t), layout: meta.NewLayout(clusterKey)}
	etcd := &proc{name: "etcd", addr: c.etcdAddr, log: filepath.Join(dir, "logs", "etcd.log"),
		args: []string{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client", c.etcdAddr, "--listen-peer", freeAddr(t), "--unsafe-no-fsync"}}
	etcd.start(t)
	t.Cleanup(etcd.kill)
	waitListening(t, etcd, readyWait)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcdAddr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c.cli, c.etcd = cli, etcd
	c.sims = make([]*simServer, nSims)
	for i := range c.sims {
		c.sims[i] = startSimServer(t, cli, c.layout, fmt.Sprintf("sim-%02d", i), ttl)
	}
	master := &proc{name: "master", addr: freeAddr(t), log: filepath.Join(dir, "logs", "master.log"), env: masterEnv}
	master.args = append([]string{"master", "--etcd", c.etcdAddr, "--cluster", clusterKey, "--listen", master.addr, "--id", "master-1", "--log-level", "info"}, masterArgs...)
	master.start(t)
	t.Cleanup(func() {
		master.kill()
		if t.Failed() {
			t.Logf("master log:\n%s", master.tail(60))
		}
	})
	waitListening(t, master, readyWait)
	c.master = master
	conn, err := grpc.NewClient(master.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c.mc = tabulapb.NewMasterClient(conn)
	waitUntil(t, readyWait, func() (bool, string) {
		ss, err := c.mc.ListServers(context.Background(), &tabulapb.ListServersRequest{})
		return err == nil && len(ss.GetServers()) == nSims, fmt.Sprintf("servers listed: %v %v", len(ss.GetServers()), err)
	})
	return c
}

// createLoaded creates tables of 100 tablets, nTablets in all (rounded
// up), and waits until the simulated servers hold them all.
func (c *simCluster) createLoaded(t *testing.T, nTablets int) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	tables := (nTablets + 99) / 100
	createTablesOf100(t, c.mc, tables)
	waitUntil(t, 30*time.Minute, func() (bool, string) {
		n := 0
		for _, s := range c.sims {
			n += s.count()
		}
		return n == tables*100, fmt.Sprintf("%d of %d tablets loaded", n, tables*100)
	})
	return tables * 100, time.Since(start)
}

// waitLost waits until every tablet of lost, which dead held until it was
// killed at killed, is
// loaded by another simulated server or counted by others (the tablets
// held by real servers, which hold no others), and returns when its lease
// was seen gone.
func (c *simCluster) waitLost(t *testing.T, dead *simServer, lost map[string]bool, killed time.Time, others func() int) time.Duration {
	t.Helper()
	var atLease time.Duration
	waitUntil(t, 20*time.Minute, func() (bool, string) {
		if atLease == 0 {
			if r, _ := c.cli.Get(context.Background(), c.layout.ServerKey(dead.id)); r != nil && len(r.Kvs) == 0 {
				atLease = time.Since(killed)
			}
		}
		n := 0
		for _, s := range c.sims {
			if s != dead {
				n += s.countOf(lost)
			}
		}
		if others != nil {
			n += others()
		}
		return n == len(lost), fmt.Sprintf("%d of the dead server's %d tablets loaded elsewhere", n, len(lost))
	})
	return atLease
}

// createTablesOf100 creates tables t00000, t00001, ... of 100 tablets
// each, 8 at a time.
func createTablesOf100(t *testing.T, mc tabulapb.MasterClient, tables int) {
	t.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= tables {
					return
				}
				var splits [][]byte
				for k := 1; k < 100; k++ {
					splits = append(splits, fmt.Appendf(nil, "row%04d", k*100))
				}
				s := &tabulapb.TableSchema{Name: fmt.Sprintf("t%05d", i), Families: []*tabulapb.Family{{Name: "a", MaxVersions: 1}, {Name: "b", MaxVersions: 1}}}
				// The master answers before its first election is over
				// ("not the leader"): wait for it as for any retryable error.
				var err error
				for deadline := time.Now().Add(readyWait); ; time.Sleep(100 * time.Millisecond) {
					_, err = mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: s, SplitKeys: splits})
					if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
						break
					}
				}
				if err != nil {
					errs <- fmt.Errorf("CreateTable %s: %w", s.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// simServer is a simulated tablet server (TestMeasureMasterIdle).
type simServer struct {
	tabulapb.UnimplementedTabletServerServer
	id      string
	srv     *grpc.Server
	stopKA  context.CancelFunc
	reports loadreport.Reporter

	mu   sync.Mutex
	held map[string]*tabulapb.TabletStats // by table/id
}

func startSimServer(t *testing.T, cli *clientv3.Client, l meta.Layout, id string, ttl time.Duration) *simServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &simServer{id: id, srv: grpc.NewServer(), held: map[string]*tabulapb.TabletStats{}}
	tabulapb.RegisterTabletServerServer(s.srv, s)
	go s.srv.Serve(lis)
	t.Cleanup(s.kill)
	ctx := context.Background()
	lr, err := cli.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	kctx, cancel := context.WithCancel(ctx)
	s.stopKA = cancel
	ka, err := cli.KeepAlive(kctx, lr.ID)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()
	rec := meta.ServerRecord{ID: id, Address: lis.Addr().String(), StartTime: time.Now().UnixMicro(), Lease: int64(lr.ID)}
	if _, err := cli.Put(ctx, l.ServerKey(id), meta.EncodeServer(rec), clientv3.WithLease(lr.ID)); err != nil {
		t.Fatal(err)
	}
	return s
}

// kill stops answering and renewing, as a crashed process does (the lease
// is not revoked: it expires).
func (s *simServer) kill() {
	s.stopKA()
	s.srv.Stop()
}

func (s *simServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

func (s *simServer) ids() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.held))
	for k := range s.held {
		out[k] = true
	}
	return out
}

func (s *simServer) countOf(ids map[string]bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.held {
		if ids[k] {
			n++
		}
	}
	return n
}

// LoadTablet holds the tablet with stats of the size a real server
// reports: two families, 8 access keys, no traffic (an idle cluster).
func (s *simServer) LoadTablet(_ context.Context, req *tabulapb.LoadTabletRequest) (*tabulapb.LoadTabletResponse, error) {
	ti := req.GetTablet()
	ref := &tabulapb.TabletRef{Table: ti.GetTable(), TabletId: ti.GetTabletId(), Epoch: ti.GetEpoch()}
	ts := &tabulapb.TabletStats{
		Tablet: ref, StartKey: ti.GetStartKey(), EndKey: ti.GetEndKey(),
		SizeBytes: 64 << 20, MemtableBytes: 1 << 20, Sstables: 4, Cells: 1_000_000, CompactionBacklog: 0,
		LoadWindowMicros: 10_000_000, FamilyBytes: map[string]int64{"a": 40 << 20, "b": 23 << 20},
		ReadsTotal: 12345, WritesTotal: 6789, ReadBytesTotal: 1 << 30, WriteBytesTotal: 1 << 29,
	}
	for q := range 8 {
		ts.AccessQuantiles = append(ts.AccessQuantiles, fmt.Appendf(nil, "%suser%012d", ti.GetStartKey(), q*1000))
	}
	s.mu.Lock()
	s.held[ref.GetTable()+"/"+ref.GetTabletId()] = ts
	s.mu.Unlock()
	return &tabulapb.LoadTabletResponse{}, nil
}

func (s *simServer) UnloadTablet(_ context.Context, req *tabulapb.UnloadTabletRequest) (*tabulapb.UnloadTabletResponse, error) {
	s.mu.Lock()
	delete(s.held, req.GetTablet().GetTable()+"/"+req.GetTablet().GetTabletId())
	s.mu.Unlock()
	return &tabulapb.UnloadTabletResponse{}, nil
}

func (s *simServer) UpdateSchema(context.Context, *tabulapb.UpdateSchemaRequest) (*tabulapb.UpdateSchemaResponse, error) {
	return &tabulapb.UpdateSchemaResponse{}, nil
}

// ServerStats answers as a real server: every tablet sorted, full or
// delta (tabletserver.Server.ServerStats).
func (s *simServer) ServerStats(_ context.Context, req *tabulapb.ServerStatsRequest) (*tabulapb.ServerStatsResponse, error) {
	s.mu.Lock()
	cur := make([]*tabulapb.TabletStats, 0, len(s.held))
	for _, ts := range s.held {
		cur = append(cur, ts)
	}
	s.mu.Unlock()
	sort.Slice(cur, func(i, j int) bool {
		a, b := cur[i], cur[j]
		if a.Tablet.Table != b.Tablet.Table {
			return a.Tablet.Table < b.Tablet.Table
		}
		return bytes.Compare(a.StartKey, b.StartKey) < 0
	})
	resp := &tabulapb.ServerStatsResponse{ServerId: s.id, Serving: true, LoadWindowEndMicros: time.Now().UnixMicro()}
	s.reports.Fill(req, resp, cur)
	return resp, nil
}

// procCPU is p's user + system CPU so far (/proc/PID/stat, Linux).
func procCPU(t *testing.T, p *proc) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz
}

// gcStats sums the GC cycles a process logged with GODEBUG=gctrace=1.
type gcStats struct {
	cycles     int
	forced     int           // cycles the runtime forced (one per 2 minutes without another)
	cpu        time.Duration // the "ms cpu" parts summed (assist, background, idle workers)
	lastHeapMB int           // the live heap after the last cycle
}

// gcTrace reads p's log for gctrace lines ("gc 12 @3.1s 2%: 0.1+20+0.1
// ms clock, 0.2+5/10/0+0.3 ms cpu, 300->310->150 MB, ...").
func gcTrace(t *testing.T, p *proc) gcStats {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	var st gcStats
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		_, rest, ok := strings.Cut(line, "clock, ")
		cpu, rest2, ok2 := strings.Cut(rest, " ms cpu, ")
		if !ok || !ok2 {
			continue
		}
		st.cycles++
		if strings.Contains(line, "(forced)") {
			st.forced++
		}
		for _, part := range strings.FieldsFunc(cpu, func(r rune) bool { return r == '+' || r == '/' }) {
			if ms, err := strconv.ParseFloat(part, 64); err == nil {
				st.cpu += time.Duration(ms * float64(time.Millisecond))
			}
		}
		if heaps, _, ok := strings.Cut(rest2, " MB"); ok {
			if i := strings.LastIndex(heaps, "->"); i >= 0 {
				st.lastHeapMB, _ = strconv.Atoi(heaps[i+2:])
			}
		}
	}
	return st
}

// procRSS is p's resident memory (/proc/PID/status VmRSS).
func procRSS(t *testing.T, p *proc) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func etcdStatus(t *testing.T, cli *clientv3.Client, ep string) *clientv3.StatusResponse {
	t.Helper()
	st, err := cli.Status(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// waitUntil polls cond every 100 ms until it holds or within passes.
func waitUntil(t *testing.T, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, what := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
