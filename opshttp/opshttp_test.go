package opshttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

// flag is a readiness check the test sets.
type flag struct {
	mu  sync.Mutex
	err error
}

func (f *flag) set(err error) { f.mu.Lock(); f.err = err; f.mu.Unlock() }
func (f *flag) check(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadyzFollowsTheCheck(t *testing.T) {
	f := &flag{err: errors.New("standby cannot reach etcd")}
	s, err := Serve("127.0.0.1:0", NewHealth(f.check))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr()

	if code, body := get(t, base+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q, want 200 ok even when not ready", code, body)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "standby cannot reach etcd") {
		t.Errorf("/readyz = %d %q, want 503 with the reason", code, body)
	}
	if err := Probe(context.Background(), s.Addr(), "/readyz"); err == nil || !strings.Contains(err.Error(), "cannot reach etcd") {
		t.Errorf("Probe = %v, want the reason", err)
	}
	f.set(nil)
	if code, body := get(t, base+"/readyz"); code != 200 || strings.TrimSpace(body) != "ready" {
		t.Errorf("/readyz = %d %q once ready, want 200 ready", code, body)
	}
	if err := Probe(context.Background(), s.Addr(), "/readyz"); err != nil {
		t.Errorf("Probe of a ready process: %v", err)
	}
}

// The gRPC status follows the check on each tick of Run, and nothing
// before the first evaluation counts as serving.
func TestGRPCHealthFollowsTheCheck(t *testing.T) {
	f := &flag{}
	h := NewHealth(f.check)
	c := rpctest.DialHealth(t, rpctest.Serve(t, h.Register))
	if got := rpctest.CheckHealth(t, c); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("before any check: %v, want NOT_SERVING", got)
	}
	tick := make(chan time.Time) // unbuffered: a send returns once Run took it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.Run(ctx, tick) }()
	defer func() { cancel(); <-done }()
	// step makes Run evaluate once and waits until it has: the second send
	// is received only after the first evaluation finished.
	step := func() { tick <- time.Time{}; tick <- time.Time{} }

	step()
	if got := rpctest.CheckHealth(t, c); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("ready: %v, want SERVING", got)
	}
	f.set(errors.New("lease not held"))
	step()
	if got := rpctest.CheckHealth(t, c); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("not ready: %v, want NOT_SERVING", got)
	}
	if err := h.Last(); err == nil || err.Error() != "lease not held" {
		t.Errorf("Last = %v", err)
	}
	f.set(nil)
	step()
	if got := rpctest.CheckHealth(t, c); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("ready again: %v, want SERVING", got)
	}
	h.Shutdown()
	step()
	if got := rpctest.CheckHealth(t, c); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after Shutdown, a passing check: %v, want NOT_SERVING for good", got)
	}
}
