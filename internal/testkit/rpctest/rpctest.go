// Package rpctest serves gRPC for one test on a loopback port, and probes
// the standard gRPC health service (grpc.health.v1) of a server:
//
//	addr := rpctest.Serve(t, func(s *grpc.Server) { tabulapb.RegisterMasterServer(s, fake) })
//	hc := rpctest.DialHealth(t, addr)
//	if st := rpctest.CheckHealth(t, hc); st != healthpb.HealthCheckResponse_SERVING { … }
//
// Everything it starts is stopped, and waited for, by t.Cleanup. Part of
// internal/testkit: tests only.
package rpctest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// checkTimeout bounds one health check: a server that does not answer in
// it is broken, not slow.
const checkTimeout = 10 * time.Second

// Serve starts a gRPC server on a free port of 127.0.0.1 with the services
// register adds, and returns its address. t.Cleanup stops the server and
// waits for its serving goroutine.
func Serve(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	register(s)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Serve(lis) }()
	t.Cleanup(func() { s.Stop(); wg.Wait() })
	return lis.Addr().String()
}

// DialHealth returns a client of the health service at addr, over
// plaintext; t.Cleanup closes its connection.
func DialHealth(t testing.TB, addr string) healthpb.HealthClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// CheckHealth asks hc for the server's overall status (the empty service
// name) once, and fails the test at once if the call fails.
func CheckHealth(t testing.TB, hc healthpb.HealthClient) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("rpctest: health check: %v", err)
	}
	return resp.GetStatus()
}
