package master

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

// cutProxy forwards TCP connections to target until cut, which closes
// every connection and refuses new ones: a master behind it loses etcd.
type cutProxy struct {
	lis    net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	isCut  bool
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{lis: lis, target: strings.TrimPrefix(strings.TrimPrefix(target, "http://"), "https://")}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.stop)
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.isCut {
			p.mu.Unlock()
			c.Close()
			u.Close()
			continue
		}
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }()
	}
}

// cut closes every connection and refuses new ones until heal.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cutProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = false
}

func (p *cutProxy) stop() {
	p.lis.Close()
	p.cut()
	p.wg.Wait()
}

func (p *cutProxy) addr() string { return p.lis.Addr().String() }

func readyNow(m *Master) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return m.Ready(ctx)
}

// The leader and a standby with a live session are ready, and the gRPC
// health service says so; a standby cut off from etcd is not.
func TestReadiness(t *testing.T) {
	c := newEtcdCluster(t) // the standby behind the proxy loses etcd itself
	leader := c.startMaster(Options{ListenAddr: "127.0.0.1:0"})
	c.waitLeader(leader)
	if err := readyNow(leader); err != nil {
		t.Fatalf("leader not ready: %v", err)
	}

	p := newCutProxy(t, c.endpoints[0])
	standby := c.startMaster(Options{ListenAddr: "127.0.0.1:0"})
	// startMaster points at etcd directly; start the one to cut off by hand.
	opts := Options{ListenAddr: "127.0.0.1:0", Etcd: []string{p.addr()}, Cluster: "test", SessionTTL: time.Second,
		RPCTimeout: 3 * time.Second, LoadTimeout: 3 * time.Second, Logger: testLogger(t)}
	behind, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { behind.Close() })
	for _, m := range []*Master{standby, behind} {
		waitFor(t, 10*time.Second, func() (bool, string) {
			err := readyNow(m)
			return err == nil, "standby not ready: " + errString(err)
		})
		if m.IsLeader() {
			t.Fatal("a second leader")
		}
	}
	// The gRPC health service follows Ready (after an evaluation).
	if err := behind.Health().Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	hc := rpctest.DialHealth(t, behind.Addr())
	if st := rpctest.CheckHealth(t, hc); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("standby's gRPC health: %v, want SERVING", st)
	}

	p.cut()
	err = readyNow(behind)
	if err == nil || !strings.Contains(err.Error(), "standby") {
		t.Fatalf("standby cut off from etcd: Ready = %v, want an error naming the standby", err)
	}
	t.Logf("cut off: %v", err)
	behind.Health().Update(context.Background())
	if st := rpctest.CheckHealth(t, hc); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("cut-off standby's gRPC health: %v, want NOT_SERVING", st)
	}
	if err := readyNow(leader); err != nil {
		t.Errorf("the leader, not cut off: %v", err)
	}
	// Back in touch, it is ready again (and can close: a master cut off
	// from etcd waits for it to close).
	p.heal()
	waitFor(t, 10*time.Second, func() (bool, string) {
		err := readyNow(behind)
		return err == nil, "healed standby not ready: " + errString(err)
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
