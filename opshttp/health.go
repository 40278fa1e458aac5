package opshttp

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Check reports whether a process is ready to do its job: nil if it is,
// else an error saying what is not ready (shown to operators as is).
type Check func(ctx context.Context) error

// CheckTimeout bounds one evaluation of a Check: a probe must answer
// quickly even when what it checks (etcd, a master) does not.
const CheckTimeout = 2 * time.Second

// PollInterval is how often a process re-evaluates its check for the gRPC
// health service (Run); /readyz evaluates it on each request.
const PollInterval = time.Second

// ErrStopped is the readiness of a process that is shutting down.
var ErrStopped = errors.New("opshttp: shutting down")

// Health keeps the standard gRPC health service (service "", the whole
// process) in step with a readiness check. Safe for concurrent use.
type Health struct {
	check Check
	srv   *health.Server

	mu      sync.Mutex
	last    error // the result of the last evaluation
	stopped bool
}

// NewHealth returns a Health for check. Until the first evaluation the
// process counts as not ready: a probe must not pass before anything was
// checked.
func NewHealth(check Check) *Health {
	h := &Health{check: check, srv: health.NewServer(), last: errors.New("opshttp: not checked yet")}
	h.srv.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return h
}

// Register adds the gRPC health service (grpc.health.v1.Health) to s.
func (h *Health) Register(s *grpc.Server) { healthpb.RegisterHealthServer(s, h.srv) }

// Update evaluates the check now, sets the gRPC status from it and
// returns its result.
func (h *Health) Update(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	err := h.check(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrStopped // a late evaluation must not revive a stopped process
	}
	h.last = err
	st := healthpb.HealthCheckResponse_SERVING
	if err != nil {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	h.srv.SetServingStatus("", st)
	return err
}

// Last returns the result of the last evaluation without checking again.
func (h *Health) Last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Run evaluates the check at once and then on every receive from tick,
// until ctx is done or tick is closed. Processes pass a ticker's channel;
// tests pass their own channel, so they decide when evaluations happen.
func (h *Health) Run(ctx context.Context, tick <-chan time.Time) {
	h.Update(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-tick:
			if !ok {
				return
			}
			h.Update(ctx)
		}
	}
}

// Start runs the check every PollInterval in a goroutine until the
// returned stop function is called; stop waits for the goroutine.
func (h *Health) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	t := time.NewTicker(PollInterval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx, t.C)
	}()
	return func() {
		cancel()
		t.Stop()
		<-done
	}
}

// Shutdown marks the process NOT_SERVING for good, so that balancers
// stop sending calls while it drains. Later evaluations change nothing.
func (h *Health) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	h.last = ErrStopped
	h.srv.Shutdown()
}
