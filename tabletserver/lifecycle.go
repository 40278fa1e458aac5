package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// The server's lifecycle: every goroutine it starts belongs to one of two
// groups under one root context, and Close stops them in one order.
//
//   - lease runs the lease loop (lease.go) under the root context. It is a
//     group of its own because it must outlive everything else: Close
//     flushes the tablets only while the lease is safe, so the lease has to
//     be renewed until they are closed.
//   - work runs everything else, under a context derived from the root:
//     the gRPC Serve goroutine, scans that outlived their handler
//     (stall.go), the split and load loops, the assignment watch and the
//     credentials cache, the retirement of failed tablets (failure.go) and
//     of tablets handed on (watch.go), and the replacement of a failed
//     shared log (logrenew.go). All of them use the tablets, so all of
//     them end before Close closes the tablets.
//
// A group refuses new goroutines once it is stopped, so nothing starts
// behind Close's back. Goroutines that other packages start for the
// server are theirs to stop, and Close stops them: the health poller
// (opshttp.Health.Start, step 1 below), the credentials cache (auth, under
// the work context), the shared log's and the engines' own (closed with
// them, steps 4 and 5), the etcd client's (step 7).

// group is a set of goroutines run under one context and waited for
// together.
type group struct {
	ctx    context.Context // done once stop is called
	cancel context.CancelFunc

	// mu protects stopped, and orders every wg.Add before stop's Wait.
	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// start gives g a context derived from parent.
func (g *group) start(parent context.Context) {
	g.ctx, g.cancel = context.WithCancel(parent)
}

// run runs fn(ctx) in a goroutine of g and reports true, or reports false
// and runs nothing once g is stopped.
func (g *group) run(fn func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn(g.ctx)
	}()
	return true
}

// stop cancels g's context, refuses new goroutines and waits for those
// running. It may be called more than once.
func (g *group) stop() {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
	}
	g.wg.Wait()
}

// Close shuts the server down gracefully and releases its lease so the
// master reassigns its tablets at once. A paused server does not flush
// (its lease is not safe); an abandoned one's tablets were already closed
// without a flush. Close is idempotent. It goes in this order:
//
//  1. mark the server closed (data calls and loads get ErrClosed) and
//     shut the health service down, so balancers stop sending calls;
//  2. stop accepting calls: gRPC's graceful stop, then in-process calls'
//     (inprocess.go), waiting up to ShutdownTimeout for the calls in
//     flight, then cutting them off;
//  3. stop the work group: cancel its context (split and load loops,
//     assignment watch, credentials cache, shared log renewal) and wait
//     for every goroutine of it, including scans whose handler gave up on
//     a stalled client and retirements of failed tablets: none of them
//     may touch a tablet being closed; then the idle row workers
//     (rowworkers.go), whose calls have all ended with step 2;
//  4. flush (while the lease is safe) and close every tablet, under
//     closeMu, so that an abandon (the lease is gone) running now does
//     not close them under the flush. Up to closeWorkers tablets are
//     flushed and closed at once, each flush bounded by ShutdownTimeout
//     from its own start (a tablet waiting for a worker is not on the
//     clock): one by one, 5,000 tablets took 19 s, past any stop timeout
//     (docs/BENCHMARKS.md, "Tablet server shutdown"). A tablet whose
//     flush fails is still closed, and so are the others;
//  5. close the shared commit log, which every tablet wrote to;
//  6. stop the lease group: the lease loop, still renewing until now;
//  7. release etcd: revoke the lease (servers/<id> goes with it), close
//     the etcd client the server dialed (never an Options.Store);
//  8. close the metrics.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		// 1.
		s.closed.Store(true)
		s.health.Shutdown()
		s.stopHealth()
		// 2.
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			s.local.drain() // in-process calls (inprocess.go)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(s.opts.ShutdownTimeout):
			s.grpc.Stop()
			s.local.stop()
			<-done
		}
		// 3.
		s.work.stop()
		s.rows.stop()
		// 4.
		s.closeMu.Lock()
		s.mu.Lock()
		hs := s.tablets
		s.tablets = make(map[string]*held)
		s.mu.Unlock()
		errs := s.shutTablets(hs)
		s.closeMu.Unlock()
		// 5.
		if err := s.closeLog(); err != nil {
			errs = append(errs, fmt.Errorf("tabletserver: closing the shared commit log: %w", err))
		}
		// 6.
		s.lease.stop()
		// 7.
		s.revoke(s.leaseID.Swap(0))
		if s.client != nil {
			if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Errorf("tabletserver: closing the etcd client: %w", err))
			}
		}
		// 8.
		s.metrics.close()
		s.closeErr = errors.Join(errs...)
		s.logger.Info("closed")
	})
	return s.closeErr
}

// closeWorkers is how many tablets Close flushes and closes, and abandon
// closes, at once. A flush mostly waits on the disk (an SSTable and a
// manifest written and synced) or, on an object store, on uploads, so
// more of them than cores keep the storage busy; each holds an SSTable
// writer's buffers and open files, so they are bounded, like gRPC's
// stream workers (server.go), to a small multiple of the cores.
func closeWorkers() int { return 4 * runtime.GOMAXPROCS(0) }

// eachTablet calls fn for every tablet of hs, on up to closeWorkers
// goroutines at once, and returns when every call has.
func eachTablet(hs map[string]*held, fn func(h *held)) {
	slots := make(chan struct{}, closeWorkers())
	var wg sync.WaitGroup
	for _, h := range hs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(h)
		})
	}
	wg.Wait()
}

// shutTablets flushes (while the lease is safe) and closes every tablet
// of hs, several at once (eachTablet), and returns the errors of all of
// them, each naming its tablet. closeMu held.
func (s *Server) shutTablets(hs map[string]*held) []error {
	var mu sync.Mutex
	var errs []error
	eachTablet(hs, func(h *held) {
		if err := s.shutTablet(h); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errs
}

// shutTablet flushes h while the lease is safe, under a ShutdownTimeout
// of its own, then closes it even if the flush failed: what was not
// flushed stays in the shared log for the next owner.
func (s *Server) shutTablet(h *held) error {
	var errs []error
	if s.leaseSafe() {
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
		if err := h.t.Flush(ctx); err != nil && !errors.Is(err, tablet.ErrClosed) {
			errs = append(errs, fmt.Errorf("tabletserver: flushing tablet %s/%s: %w", h.table, h.id, err))
		}
		cancel()
	}
	if err := h.t.Close(); err != nil {
		errs = append(errs, fmt.Errorf("tabletserver: closing tablet %s/%s: %w", h.table, h.id, err))
	}
	return errors.Join(errs...)
}
