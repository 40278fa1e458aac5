package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/locator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file re-routes idempotent calls away from a server that went
// silent after their tablet moved (Options.LocationCheckDelay).
//
// A tablet has exactly one owner, so there is nothing to hedge to while it
// stays put: HBase's hedged (timeline) reads need region replicas, and a
// second call to the same silent server would only wait beside the first.
// What can change is the owner: a server paused past its lease loses its
// tablets to other servers while calls already sent to it sit in its
// socket. So, like CockroachDB's DistSender probing a stalled replica
// before cancelling the reads stuck on it, a call that has waited
// LocationCheckDelay asks the locator where its tablet is now (a lookup
// shared by every call waiting on that tablet). If it moved, the old
// server can no longer give a current answer (it will refuse or be
// fenced), so the call is abandoned and sent to the new owner at once,
// without backoff. Only calls that are safe to send twice are checked:
// abandoning a non-idempotent write early would make its outcome unknown
// in cases where waiting would have told (a slow server that answers), so
// such writes keep one attempt at a time, bounded by AttemptTimeout.

// DefaultLocationCheckDelay is the default Options.LocationCheckDelay:
// well above a healthy call's latency, so that checks stay rare, and well
// below the lease TTL after which a paused server's tablets move, so that
// calls find the new owner within about this long of the move.
const DefaultLocationCheckDelay = 500 * time.Millisecond

// errMoved is the cause of an attempt the client abandoned because a
// master said its tablet moved while it waited.
var errMoved = errors.New("client: tablet moved while the call waited")

// afterFuncer runs f in its own goroutine after d, unless the returned
// stop (which reports whether it stopped f from running, as
// time.Timer.Stop) is called first. Tests replace it to fire location
// checks on demand.
type afterFuncer func(d time.Duration, f func()) (stop func() bool)

func realAfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// placed is a tablet a call was sent to, and a row of it to locate it by.
type placed struct {
	tab locator.Tablet
	row []byte
}

// locationCheck watches one wait on a tablet server: a timer that runs a
// check after LocationCheckDelay and again after each check that found
// nothing moved; stop ends it. A wait that ends in time costs a timer and
// no goroutine, so that every call and every message of a read stream can
// afford one.
type locationCheck struct {
	c       *Client
	ctx     context.Context // the call's
	abandon context.CancelCauseFunc
	targets []placed
	wg      sync.WaitGroup // the armed timer's run, and the running check

	// mu protects the fields below.
	mu        sync.Mutex
	stopped   bool
	stopTimer func() bool        // of the armed timer
	cancelRun context.CancelFunc // of the running check, nil if none
	moved     *locator.Tablet    // the tablet found moved, if any
}

// checkLocation starts watching whether the tablets of targets are still
// where the call waiting under ctx was sent: every LocationCheckDelay
// until stop, it asks the locator (Relocate); when a master says one
// moved, it abandons the call with abandon(errMoved) and stops checking.
// It returns nil (stopping a nil check does nothing) when checks are
// disabled. The first timer is armed before checkLocation returns, so
// before the call is sent.
func (c *Client) checkLocation(ctx context.Context, abandon context.CancelCauseFunc, targets ...placed) *locationCheck {
	if c.opts.LocationCheckDelay < 0 || len(targets) == 0 {
		return nil
	}
	w := &locationCheck{c: c, ctx: ctx, abandon: abandon, targets: targets}
	w.mu.Lock()
	w.armLocked()
	w.mu.Unlock()
	return w
}

func (w *locationCheck) armLocked() {
	w.wg.Add(1)
	w.stopTimer = w.c.afterFunc(w.c.opts.LocationCheckDelay, w.run)
}

// run is one check, in the timer's goroutine.
func (w *locationCheck) run() {
	defer w.wg.Done()
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.cancelRun = cancel
	w.mu.Unlock()
	defer cancel()

	var found *locator.Tablet
	for _, t := range w.targets {
		fresh, err := w.c.loc.Relocate(ctx, t.tab, t.row)
		if ctx.Err() != nil {
			break
		}
		if moved(t.tab, fresh, err) {
			found = &t.tab
			break
		}
	}

	w.mu.Lock()
	w.cancelRun = nil
	if found != nil {
		w.moved = found
	} else if !w.stopped && ctx.Err() == nil {
		// Unchanged, or no master answered: keep waiting, check again.
		w.armLocked()
	}
	w.mu.Unlock()
	if found != nil {
		w.abandon(errMoved)
	}
}

// stop ends the check and waits for it. It returns the error to give the
// call when the check abandoned it (a rerouteError), or nil.
func (w *locationCheck) stop() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	w.stopped = true
	if w.stopTimer() {
		w.wg.Done() // its run will never start
	}
	if w.cancelRun != nil {
		w.cancelRun()
	}
	w.mu.Unlock()
	w.wg.Wait()
	if w.moved == nil {
		return nil
	}
	return rerouted(*w.moved)
}

// moved reports whether a Relocate answer (fresh, err) says that tablet
// old no longer lives where it did: split or merged (another id), given
// out again (a newer epoch), on another server, or taken away and not yet
// given out (unassigned). An error other than unassigned (no master
// answered) or an older epoch (a master lagging behind what the client
// already knew) is not a move.
func moved(old, fresh locator.Tablet, err error) bool {
	if errors.Is(err, locator.ErrUnassigned) {
		return true
	}
	if err != nil {
		return false
	}
	return fresh.ID != old.ID || fresh.Epoch > old.Epoch || (fresh.Epoch == old.Epoch && fresh.Address != old.Address)
}

// rerouteError is the error of an attempt abandoned because its tablet
// moved: UNAVAILABLE to whoever sees it as the last error of a call, and
// to the retry loops a sign to retry at once, without backoff.
type rerouteError struct{ st *status.Status }

func (e *rerouteError) Error() string              { return e.st.Err().Error() }
func (e *rerouteError) GRPCStatus() *status.Status { return e.st }

func rerouted(tab locator.Tablet) error {
	return &rerouteError{status.New(codes.Unavailable, fmt.Sprintf(
		"client: tablet %s of table %s moved off tablet server %s (epoch %d) while a call to it waited; the call was abandoned to be re-sent",
		tab.ID, tab.Table, tab.Address, tab.Epoch))}
}

// isReroute reports whether err is an attempt abandoned because its
// tablet moved.
func isReroute(err error) bool {
	var re *rerouteError
	return errors.As(err, &re)
}
