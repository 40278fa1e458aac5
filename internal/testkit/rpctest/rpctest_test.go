package rpctest

import (
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A served health service answers through DialHealth and CheckHealth,
// and follows the status the server sets.
func TestServeAndCheckHealth(t *testing.T) {
	hs := health.NewServer()
	addr := Serve(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, hs) })
	hc := DialHealth(t, addr)
	if st := CheckHealth(t, hc); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("a new health server: %v, want SERVING", st)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if st := CheckHealth(t, hc); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("after SetServingStatus: %v, want NOT_SERVING", st)
	}
}
