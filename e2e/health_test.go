package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

// Real processes with --http: the master's and the tablet server's /readyz
// answer 200 once they are ready, /healthz answers at all, and their gRPC
// ports serve the standard health service, SERVING.
func TestHealthEndpoints(t *testing.T) {
	httpM, httpS := freeAddr(t), freeAddr(t)
	c := startCluster(t, clusterOptions{masters: 1, servers: 1,
		masterArgs: []string{"--http", httpM}, serverArgs: []string{"--http", httpS}})
	for _, a := range []string{httpM, httpS} {
		waitHTTP(t, "http://"+a+"/healthz", readyWait)
		waitHTTP(t, "http://"+a+"/readyz", readyWait)
	}
	if c.sec != nil {
		t.Log("secure cluster: the gRPC health check needs the cluster's TLS; checked in the master and tabletserver packages")
		return
	}
	for _, addr := range []string{c.masters[0].addr, c.servers[0].addr} {
		hc := rpctest.DialHealth(t, addr)
		var last string
		deadline := time.Now().Add(readyWait)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				break
			}
			last = resp.GetStatus().String()
			if err != nil {
				last = err.Error()
			}
			if time.Now().After(deadline) {
				t.Fatalf("gRPC health of %s: %s, want SERVING", addr, last)
			}
			time.Sleep(100 * time.Millisecond) // the process re-evaluates every second
		}
	}
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, url string, within time.Duration) {
	t.Helper()
	var last string
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status + ": " + string(b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200: %s", url, last)
}
