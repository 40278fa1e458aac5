package gateway

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/opshttp"
)

// MaxRequestBytes is the largest request the gateway accepts: a MutateRows
// batch or a row of large cells (Tabula's cells hold up to 64 MiB).
const MaxRequestBytes = 256 << 20

// Process is a gateway serving on a listener.
type Process struct {
	srv        *grpc.Server
	lis        net.Listener
	done       chan error
	health     *opshttp.Health
	stopHealth func()
	metrics    *metrics.Group // nil without Options.Metrics
}

// Start listens on addr ("127.0.0.1:8086"; port 0 picks one) and serves
// the Bigtable API for the cluster c talks to until Close.
func Start(addr string, c *client.Client, opts Options) (*Process, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listening on %s: %w", addr, err)
	}
	group := metrics.Track(opts.Metrics)
	gm := metrics.NewGRPC(group)
	sopts := append(gm.ServerOptions(), opts.ServerOptions()...)
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	srv := grpc.NewServer(append(sopts,
		grpc.MaxRecvMsgSize(MaxRequestBytes),
		grpc.MaxSendMsgSize(MaxRequestBytes),
		// As a tablet server's port (tabletserver.grpcServerOptions): a
		// batch of writes (100 rows of 1 KB is 100 KB) arrives without
		// waiting for a window update; scans stream several MiB per round
		// trip.
		grpc.InitialWindowSize(8<<20),
		grpc.InitialConnWindowSize(32<<20),
		grpc.ReadBufferSize(256<<10),
		grpc.WriteBufferSize(256<<10),
		// Calls run on a pool of goroutines whose stacks have already
		// grown: a call through the gateway runs the Tabula client and,
		// in process, the tablet server's handler on its goroutine, deep
		// enough that a new goroutine per call spent about 12% of the CPU
		// of a point read copying its stack as it grew. gRPC starts a
		// new goroutine for a call that finds every worker busy, and a
		// call's worker waits on the tablet server, so the pool is sized
		// for the calls in flight (streamWorkers), not for the cores.
		grpc.NumStreamWorkers(streamWorkers()),
		// Scans' answers go out as the bytes wireSink wrote; every
		// other message through the proto codec, as without it.
		grpc.ForceServerCodecV2(convert.Codec{}),
		// Bigtable clients ping idle connections; let them.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	)...)
	s := New(c, opts)
	s.wire = true
	s.Register(srv)
	p := &Process{srv: srv, lis: lis, done: make(chan error, 1), metrics: group}
	p.health = opshttp.NewHealth(func(ctx context.Context) error { return Ready(ctx, c) })
	p.health.Register(srv)
	gm.Init(srv)
	p.stopHealth = p.health.Start()
	go func() { p.done <- srv.Serve(lis) }()
	return p, nil
}

// streamWorkers is the size of the gateway's pool of call goroutines:
// enough for the calls a gateway has in flight under load (with 4 per
// core, 16 clients' point reads found every worker busy half the time:
// docs/BENCHMARKS.md "gateway stream workers"). An idle worker costs its
// stack, a few KiB.
func streamWorkers() uint32 { return uint32(max(256, 4*runtime.GOMAXPROCS(0))) }

// Addr returns the address the gateway listens on.
func (p *Process) Addr() string { return p.lis.Addr().String() }

// Close stops accepting calls, lets calls in flight finish for up to 5
// seconds, then cuts the rest.
func (p *Process) Close() error {
	p.health.Shutdown()
	p.stopHealth()
	t := time.AfterFunc(5*time.Second, p.srv.Stop)
	defer t.Stop()
	p.srv.GracefulStop()
	p.metrics.Close()
	if err := <-p.done; err != nil && err != grpc.ErrServerStopped {
		return err
	}
	return nil
}

// Ready reports whether a gateway using c can serve: c reaches a master
// (one ListTables, which a master answers from memory). The gateway keeps
// no state of its own, so that is all it needs.
func Ready(ctx context.Context, c *client.Client) error {
	_, err := c.Admin().ListTables(ctx)
	switch status.Code(err) {
	case codes.OK, codes.Unauthenticated, codes.PermissionDenied:
		// A refusal is an answer: with CallerAuth the gateway's client
		// may have no rights of its own, and needs none to serve.
		return nil
	}
	return fmt.Errorf("gateway: no master answers: %w", err)
}

// ServerOptions are the options of the gRPC server a gateway with these
// options needs beyond Register: the interceptors of CallerAuth (none
// without it). Start installs them.
func (o Options) ServerOptions() []grpc.ServerOption { return o.callerInterceptors() }

// Health returns the gateway's readiness as served by its gRPC health
// service, for the process's HTTP endpoints (opshttp.Serve).
func (p *Process) Health() *opshttp.Health { return p.health }
