package tabletserver

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

func wantNotReady(t *testing.T, srv *Server, what, reason string) {
	t.Helper()
	err := srv.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), reason) {
		t.Fatalf("%s: Ready = %v, want an error about %q", what, err, reason)
	}
}

// A registered server with its loads done is ready, and its gRPC health
// service says so; a load in progress or failed, a pause and Close make
// it not ready.
func TestReadiness(t *testing.T) {
	e := newEnv(t)
	var noRenewals atomic.Bool
	srv := e.start(func(o *Options) { o.PauseRenewals = noRenewals.Load })
	c := e.dial(srv)
	if err := srv.Ready(e.ctx); err != nil {
		t.Fatalf("registered, nothing to load: %v", err)
	}
	e.load(c, e.assign("t1", nil, []byte("m"), srv, 1))
	if err := srv.Ready(e.ctx); err != nil {
		t.Fatalf("after loading its tablet: %v", err)
	}
	if err := srv.Health().Update(e.ctx); err != nil {
		t.Fatal(err)
	}
	hc := rpctest.DialHealth(t, srv.Addr())
	if st := rpctest.CheckHealth(t, hc); st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health of a ready server: %v", st)
	}

	key := tabletKey("users", "t2")
	srv.loads.started(key)
	wantNotReady(t, srv, "a load in progress", "loading 1 tablet(s), e.g. users/t2")
	srv.loads.done(key, errors.New("disk on fire"))
	wantNotReady(t, srv, "a failed load", "disk on fire")
	srv.loads.started(key)
	srv.loads.done(key, ErrNotAssigned)
	if err := srv.Ready(e.ctx); err != nil {
		t.Fatalf("a load refused because the tablet is someone else's: %v, want ready", err)
	}

	noRenewals.Store(true)
	srv.pause("test")
	wantNotReady(t, srv, "paused", "paused")
	srv.Health().Update(e.ctx)
	if st := rpctest.CheckHealth(t, hc); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("gRPC health of a paused server: %v", st)
	}
	noRenewals.Store(false)
	eventually(t, 10*time.Second, "ready after the pause", func() bool { return srv.Ready(e.ctx) == nil })

	srv.Close()
	wantNotReady(t, srv, "closed", "closed")
}
