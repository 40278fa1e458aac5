package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/embedetcd"
	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/meta"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized choices (0: pick one and log it)")

// The binary, built once by TestMain.
var (
	binPath  string
	binErr   error
	binDir   string
	keepDirs = os.Getenv("E2E_KEEP") != ""
)

// secureAll runs every cluster of these tests with TLS on every port and
// auth on, the clients as the bootstrapped admin (`make test` runs the
// package once this way: TABULA_TEST_SECURE=1). A function, read while
// tests run, so that go test's cache knows the result depends on it.
func secureAll() bool { return os.Getenv("TABULA_TEST_SECURE") != "" }

// Timings every cluster in these tests uses.
const (
	leaseTTL   = 2 * time.Second // tablet server lease and master election session
	ttlFlag    = "2s"
	readyWait  = 60 * time.Second // how long a process may take to come up
	opTimeout  = 30 * time.Second // one client call, retries included
	stopWait   = 20 * time.Second // SIGTERM to exit
	clusterKey = "default"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Short() {
		binPath, binErr = buildBinary()
	}
	code := 0
	goleak.VerifyTestMain(m, goleak.Cleanup(func(c int) {
		code = c
		if binDir != "" {
			os.RemoveAll(binDir)
		}
		os.Exit(code)
	}))
}

// buildBinary runs `go build ./cmd/tabula` from the repository root.
func buildBinary() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	binDir, err = os.MkdirTemp("", "tabula-e2e-bin")
	if err != nil {
		return "", err
	}
	path := filepath.Join(binDir, "tabula")
	args := []string{"build", "-o", path}
	if os.Getenv("E2E_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/tabula")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return path, nil
}

// repoRoot is the directory holding go.mod, found from this file's path.
func repoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("e2e: cannot find the source file's path")
	}
	dir := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("e2e: no go.mod above %s: %w", file, err)
	}
	return dir, nil
}

// slow skips the test under -short and fails it if the binary did not build.
func slow(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: starts real processes; skipped with -short")
	}
	if binErr != nil {
		t.Fatalf("building tabula: %v", binErr)
	}
}

// newRand returns the test's random source and logs its seed.
func newRand(t *testing.T) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x5eed))
}

// proc is one tabula process.
type proc struct {
	name string // "master-1", "ts-2", ...
	id   string // the server ID it registers (tablet servers)
	addr string // its gRPC address
	// httpAddr is its operator HTTP address (--http), when a test set
	// one and reads it.
	httpAddr string
	args     []string
	env      []string // added to the test's environment
	log      string   // path of the file holding its stdout and stderr

	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	logFile *os.File
}

// start runs the process; its output goes to p.log (appended, so restarts
// keep the earlier output).
func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "==== %s: tabula %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(binPath, p.args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	// Files, not pipes: exec starts no copying goroutines.
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", p.name, err)
	}
	p.cmd, p.logFile, p.done, p.waitErr = cmd, f, make(chan struct{}), nil
	go func() { // owned by p: stop/kill wait for done
		err := cmd.Wait()
		p.waitErr = err
		f.Close()
		close(p.done)
	}()
}

// running reports whether the process was started and has not exited.
func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process if it is running.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if !p.running() {
		t.Fatalf("%s is not running; cannot send %v", p.name, sig)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill sends SIGKILL (also to a stopped process) and waits for the exit.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for a clean exit; it kills the process and
// returns an error if it does not exit in time or exits with an error.
func (p *proc) stop() error {
	if !p.running() {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("%s exited after SIGTERM: %v", p.name, p.waitErr)
		}
		return nil
	case <-time.After(stopWait):
		p.kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed it", p.name, stopWait)
	}
}

// crashMarks are what the Go runtime writes when a process crashes or (in
// a binary built with E2E_RACE=1) finds a data race.
var crashMarks = []string{"WARNING: DATA RACE", "\npanic: ", "\nfatal error: "}

// checkLog fails the test if the process's log shows a crash or a race.
func (p *proc) checkLog(t *testing.T) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return
	}
	for _, m := range crashMarks {
		if i := strings.Index(string(b), m); i >= 0 {
			end := min(len(b), i+3000)
			t.Errorf("%s's log shows %q:\n%s", p.name, strings.TrimSpace(m), b[i:end])
		}
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines in %s)", len(lines)-n, p.log)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// cluster is etcd (in this process) plus master and tablet server
// processes sharing one storage root.
type cluster struct {
	t       *testing.T
	dir     string           // everything of this test: etcd, storage, logs
	storage string           // the tablet servers' shared storage root
	sec     *clusterSecurity // nil: plaintext, no auth
	store   *seaweed.Server  // the object store, when the cluster uses one
	url     string           // its storage URL
	env     []string         // environment of masters and tablet servers (the store's credentials)
	etcd    *embedetcd.Server
	masters []*proc
	servers []*proc
	nextID  int
	// masterArgs are extra flags for every master (clusterOptions).
	masterArgs []string
}

// clusterOptions shape a cluster. The zero value means 2 masters and 3
// tablet servers.
type clusterOptions struct {
	masters, servers int
	// secure turns TLS and auth on (also on for every cluster when
	// secureAll).
	secure bool
	// objectStore keeps the tablets on SeaweedFS (started by the test)
	// instead of a shared folder; each tablet server then has its own
	// local folder, as on its own host.
	objectStore bool
	// storeIdentities, with objectStore, is SeaweedFS's identities JSON
	// (without it the store takes anonymous requests), and
	// storeCredentials the shared credentials file (AWS_SHARED_CREDENTIALS_FILE)
	// every master and tablet server reads its key from.
	storeIdentities, storeCredentials string
	// serverArgs are extra flags for every tablet server, masterArgs for
	// every master.
	serverArgs, masterArgs []string
}

// startCluster starts etcd, the masters (the first one becomes the
// leader before the others start) and the tablet servers, and waits until
// every server has registered. Everything is torn down by t.Cleanup.
func startCluster(t *testing.T, o clusterOptions) *cluster {
	t.Helper()
	if o.masters == 0 {
		o.masters = 2
	}
	if o.servers == 0 {
		o.servers = 3
	}
	dir := t.TempDir()
	if keepDirs {
		var err error
		if dir, err = os.MkdirTemp("", "tabula-e2e-"+t.Name()); err != nil {
			t.Fatal(err)
		}
		t.Logf("E2E_KEEP: test files in %s", dir)
	}
	c := &cluster{t: t, dir: dir, storage: filepath.Join(dir, "storage"), masterArgs: o.masterArgs}
	t.Cleanup(c.teardown)
	for _, d := range []string{c.storage, filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	if o.secure || secureAll() {
		c.sec = newClusterSecurity(t, dir)
	}
	if o.objectStore {
		c.startObjectStore(t, ctx, o.storeIdentities)
		if o.storeCredentials != "" {
			// Keys in the environment would win over the file.
			c.env = []string{"AWS_SHARED_CREDENTIALS_FILE=" + o.storeCredentials, "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN="}
		}
	}
	var err error
	c.etcd, err = embedetcd.Start(ctx, embedetcd.Config{Dir: filepath.Join(dir, "etcd"), NoFsync: true, TLS: c.sec.etcdFiles()})
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	c.sec.bootstrap(t, c)
	for i := range o.masters {
		m := c.addMaster(t)
		if i == 0 {
			c.waitLeader(t, m, readyWait)
		}
	}
	for range o.servers {
		c.addServer(t, o.serverArgs...)
	}
	c.waitServers(t, c.liveServerIDs()...)
	return c
}

// teardown kills every process, stops etcd, and prints the logs of a
// failed test.
func (c *cluster) teardown() {
	for _, p := range c.all() {
		p.kill()
	}
	if c.etcd != nil {
		c.etcd.Close()
	}
	if c.store != nil {
		c.store.Close()
	}
	for _, p := range c.all() {
		p.checkLog(c.t)
	}
	if c.t.Failed() {
		for _, p := range c.all() {
			c.t.Logf("---- log of %s (%s) ----\n%s", p.name, p.addr, p.tail(150))
		}
	}
}

func (c *cluster) all() []*proc { return append(append([]*proc{}, c.masters...), c.servers...) }

func (c *cluster) logPath(name string) string { return filepath.Join(c.dir, "logs", name+".log") }

// addMaster starts one more master process on a free port.
func (c *cluster) addMaster(t *testing.T) *proc {
	t.Helper()
	n := len(c.masters) + 1
	addr := freeAddr(t)
	p := &proc{name: fmt.Sprintf("master-%d", n), addr: addr}
	p.id = p.name
	p.log = c.logPath(p.name)
	p.args = []string{"master",
		"--etcd", strings.Join(c.etcd.Endpoints(), ","),
		"--cluster", clusterKey,
		"--listen", addr,
		"--id", p.id,
		"--session-ttl", ttlFlag,
		"--log-level", "info",
	}
	p.args = append(p.args, c.storageArgs()...)
	p.args = append(p.args, c.masterArgs...)
	p.args = append(p.args, c.sec.processArgs(c.sec.master())...)
	p.env = c.env
	p.start(t)
	c.masters = append(c.masters, p)
	waitListening(t, p, readyWait)
	return p
}

// addServer starts one more tablet server with a new ID on a free port.
func (c *cluster) addServer(t *testing.T, extra ...string) *proc {
	t.Helper()
	c.nextID++
	id := fmt.Sprintf("ts-%d", c.nextID)
	addr := freeAddr(t)
	p := &proc{name: id, id: id, addr: addr, log: c.logPath(id)}
	p.args = append([]string{"tabletserver",
		"--etcd", strings.Join(c.etcd.Endpoints(), ","),
		"--cluster", clusterKey,
		"--listen", addr,
		"--id", id,
		"--data", c.serverData(id),
		"--lease-ttl", ttlFlag,
		"--memtable-size", "1MiB",
		"--log-level", "info",
	}, extra...)
	if c.url != "" {
		p.args = append(p.args, "--storage", c.url)
	}
	p.env = c.env
	p.args = append(p.args, c.sec.processArgs(c.sec.tabletServer())...)
	p.start(t)
	c.servers = append(c.servers, p)
	waitListening(t, p, readyWait)
	return p
}

// masterAddrs lists every master's address, the first-started first.
func (c *cluster) masterAddrs() []string {
	var a []string
	for _, m := range c.masters {
		a = append(a, m.addr)
	}
	return a
}

func (c *cluster) liveServerIDs() []string {
	var ids []string
	for _, s := range c.servers {
		if s.running() {
			ids = append(ids, s.id)
		}
	}
	return ids
}

func (c *cluster) server(id string) *proc {
	for _, s := range c.servers {
		if s.id == id {
			return s
		}
	}
	c.t.Fatalf("no tablet server %q", id)
	return nil
}

// etcdClient returns a client of the test's etcd, closed by t.Cleanup.
func (c *cluster) etcdClient(t *testing.T) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.etcd.Endpoints(), DialTimeout: 5 * time.Second, TLS: c.sec.etcdClientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leaderAddr reads the elected master's address from etcd: the value of the
// oldest key under the election prefix ("" if none).
func (c *cluster) leaderAddr(ctx context.Context, cli *clientv3.Client) (string, error) {
	resp, err := cli.Get(ctx, meta.NewLayout(clusterKey).ElectionPrefix(), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// waitLeader waits until m is the elected master.
func (c *cluster) waitLeader(t *testing.T, m *proc, within time.Duration) {
	t.Helper()
	cli := c.etcdClient(t)
	deadline := time.Now().Add(within)
	var got string
	for time.Now().Before(deadline) {
		if !m.running() {
			t.Fatalf("%s exited while waiting for it to lead: %v", m.name, m.waitErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, _ = c.leaderAddr(ctx, cli)
		cancel()
		if got == m.addr {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s (%s) did not become the leader within %v; the election holds %q", m.name, m.addr, within, got)
}

// newClient opens a client on every master, closed by t.Cleanup.
func (c *cluster) newClient(t *testing.T) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cl, err := client.NewClientWithOptions(ctx, c.sec.clientOptions(c.masterAddrs()))
	if err != nil {
		t.Fatalf("client.NewClient(%v): %v", c.masterAddrs(), err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// waitServers waits until the masters list exactly the given live servers.
func (c *cluster) waitServers(t *testing.T, ids ...string) {
	t.Helper()
	cl := c.newClient(t)
	want := strings.Join(sortedCopy(ids), ",")
	deadline := time.Now().Add(readyWait)
	var got string
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ss, err := cl.Admin().Servers(ctx)
		cancel()
		lastErr = err
		if err == nil {
			var have []string
			for _, s := range ss {
				have = append(have, s.ID)
			}
			if got = strings.Join(sortedCopy(have), ","); got == want {
				return
			}
		}
		for _, s := range c.servers {
			if s.cmd != nil && !s.running() && contains(ids, s.id) {
				t.Fatalf("tablet server %s exited: %v", s.name, s.waitErr)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("servers listed %q, want %q after %v (last error %v)", got, want, readyWait, lastErr)
}

// waitAssigned waits until every tablet of table is assigned to one of
// the live servers and returns the tablets.
func (c *cluster) waitAssigned(t *testing.T, cl *client.Client, table string, within time.Duration) []client.TabletInfo {
	t.Helper()
	return waitTablets(t, cl, table, c.liveServerIDs(), within)
}

// waitTablets waits until every tablet of table is assigned to one of the
// servers in live (to any server if live is nil) and returns the tablets.
func waitTablets(t *testing.T, cl *client.Client, table string, live []string, within time.Duration) []client.TabletInfo {
	t.Helper()
	deadline := time.Now().Add(within)
	var last []client.TabletInfo
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ts, err := cl.Admin().Tablets(ctx, table)
		cancel()
		last, lastErr = ts, err
		if err == nil && len(ts) > 0 && allAssigned(ts, live) {
			return ts
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("tablets of %s not all assigned to live servers %v within %v (last error %v):\n%s",
		table, live, within, lastErr, formatTablets(last))
	return nil
}

func allAssigned(ts []client.TabletInfo, live []string) bool {
	for _, tb := range ts {
		if tb.State == "unassigned" || tb.Server == "" || tb.Address == "" || (live != nil && !contains(live, tb.Server)) {
			return false
		}
	}
	return true
}

func formatTablets(ts []client.TabletInfo) string {
	var b strings.Builder
	for _, tb := range ts {
		fmt.Fprintf(&b, "  %s [%q, %q) server=%s addr=%s epoch=%d state=%s\n",
			tb.ID, tb.Start, tb.End, tb.Server, tb.Address, tb.Epoch, tb.State)
	}
	return b.String()
}

// freeAddr returns a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	a, err := embedetcd.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitListening waits until the process accepts TCP connections on its
// address.
func waitListening(t *testing.T, p *proc, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !p.running() {
			t.Fatalf("%s exited while starting: %v\n%s", p.name, p.waitErr, p.tail(40))
		}
		conn, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s does not listen on %s after %v\n%s", p.name, p.addr, within, p.tail(40))
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }
