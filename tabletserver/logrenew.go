package tabletserver

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// Replacing a failed shared commit log (docs/CONTRACTS.md §3 "Commit log").
//
// A log fails when the store refuses or loses a write; its tablets leave
// service (failure.go) and are handed on, and whatever this server loads
// next needs a new log. The server starts one in the background as soon
// as it sees the failure, rather than at the next LoadTablet, which the
// master sends only after its own backoff (seconds, once a few loads
// failed against a dead store). While the store stays down it tries again
// after a short backoff capped at renewCap, so the new log exists within
// about a second of the store taking writes again; while the store says
// to slow down (vfs.ErrSlowDown) it waits longer, with jitter, so that a
// throttling store is not hammered by every server at once. Each attempt
// already carries the S3 client's own retries (up to ten requests, at
// most a second apart), so waits of up to renewSlowCap between attempts
// about halve what a server sends a throttling store, while the log is
// back at most renewSlowCap after the throttling ends.

const (
	// renewFirst is the wait after the first failed attempt; it doubles
	// with each failure up to renewCap, or renewSlowCap while the store
	// throttles.
	renewFirst   = 50 * time.Millisecond
	renewCap     = time.Second
	renewSlowCap = 4 * time.Second
	// renewWaitMax bounds how long a load waits for a renewal under way
	// (awaitLog): long enough to ride out a store restart, short enough
	// that loads stuck on one server do not hold the master's few load
	// slots for long.
	renewWaitMax = 10 * time.Second
)

// logRenewal is the background replacement of a failed shared log.
type logRenewal struct {
	// after is the timer between attempts (tests drive it); the default
	// is time.After.
	after func(time.Duration) <-chan time.Time

	// mu protects the fields below.
	mu sync.Mutex
	// attempts counts the renewal attempts, successful or not.
	attempts int64
	running  bool          // a renewal runs in the server's work group
	renewed  chan struct{} // closed when the running renewal ends
	waiting  int           // loads in awaitLog
}

// renewBackoff returns the step and the wait after a failed attempt that
// followed the step prev (0 after the first attempt): the step doubles
// from renewFirst up to renewCap, and the wait is the step; when the store
// asked to slow down the step goes from renewCap up to renewSlowCap and
// the wait is drawn from [step/2, step] by jitter(n), which returns a
// number in [0, n) ("equal jitter"), so that servers that failed together
// do not come back together.
func renewBackoff(prev time.Duration, slowDown bool, jitter func(n int64) int64) (step, wait time.Duration) {
	step = renewFirst
	if prev > 0 {
		step = 2 * prev
	}
	if !slowDown {
		step = min(step, renewCap)
		return step, step
	}
	step = min(max(step, renewCap), renewSlowCap)
	return step, step/2 + time.Duration(jitter(int64(step/2)+1))
}

// renewFailedLog starts replacing the shared log in the background if it
// failed (and no replacement runs yet).
func (s *Server) renewFailedLog() {
	s.walMu.Lock()
	failed := s.wal != nil && s.wal.Err() != nil
	s.walMu.Unlock()
	if !failed {
		return
	}
	r := &s.logRenew
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || s.closed.Load() {
		return
	}
	renewed := make(chan struct{})
	// Refused once Close stopped the work group: none starts after.
	if s.work.run(func(ctx context.Context) {
		defer close(renewed)
		s.renewLoop(ctx)
	}) {
		r.running, r.renewed = true, renewed
	}
}

// awaitLog waits, if the shared log failed, for its renewal to end (up to
// renewWaitMax or the end of ctx), so that a load that arrives while the
// store is down goes ahead the moment the store is back rather than
// failing into the master's backoff, which grows to seconds.
func (s *Server) awaitLog(ctx context.Context) {
	s.renewFailedLog()
	r := &s.logRenew
	r.mu.Lock()
	running, renewed := r.running, r.renewed
	if running {
		r.waiting++
	}
	r.mu.Unlock()
	if !running {
		return
	}
	defer func() {
		r.mu.Lock()
		r.waiting--
		r.mu.Unlock()
	}()
	t := time.NewTimer(renewWaitMax)
	defer t.Stop()
	select {
	case <-renewed:
	case <-ctx.Done():
	case <-t.C:
	}
}

// renewLoop tries to start a new shared log until one is healthy or ctx
// (the server's work) ends.
func (s *Server) renewLoop(ctx context.Context) {
	r := &s.logRenew
	after := r.after
	if after == nil {
		after = time.After
	}
	defer func() {
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
	}()
	var step, wait time.Duration
	for attempt := 1; ; attempt++ {
		r.mu.Lock()
		r.attempts++
		r.mu.Unlock()
		// A log is named after the lease it is started under: without a
		// safe lease (the server may be about to register under a new
		// one, which starts its own log) none is started here.
		err := ErrFenced
		if s.leaseSafe() {
			_, err = s.sharedLog()
		}
		if err == nil {
			if attempt > 1 {
				s.logger.Info("the store takes writes again: new shared commit log started", "attempts", attempt)
			}
			return
		}
		slow := errors.Is(err, vfs.ErrSlowDown)
		step, wait = renewBackoff(step, slow, rand.Int64N)
		s.logger.Warn("starting a new shared commit log failed; trying again", "attempt", attempt, "wait", wait, "slow_down", slow, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-after(wait):
		}
	}
}

// renewAttempts returns how many renewal attempts the server made.
func (s *Server) renewAttempts() int64 {
	s.logRenew.mu.Lock()
	defer s.logRenew.mu.Unlock()
	return s.logRenew.attempts
}
