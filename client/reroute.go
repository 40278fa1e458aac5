package client

import (
	"context"
	"errors"
	"fmt"
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

// timerFunc makes the timers of location checks: a channel that receives
// once after d, and a function that stops the timer. Tests replace it to
// fire checks on demand.
type timerFunc func(d time.Duration) (<-chan time.Time, func() bool)

func realTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// locationCheck watches one wait on a tablet server; stop ends it.
type locationCheck struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
	// moved is the tablet found moved, if any; read it after stop.
	moved *locator.Tablet
}

// placed is a tablet a call was sent to, and a row of it to locate it by.
type placed struct {
	tab locator.Tablet
	row []byte
}

// checkLocation starts checking, every LocationCheckDelay until stop,
// whether the tablets of targets are still where the call waiting under
// ctx was sent. When a master says one moved, checkLocation abandons the
// call with abandon(errMoved) and stops checking. It returns nil
// (stopping a nil check does nothing) when checks are disabled.
func (c *Client) checkLocation(ctx context.Context, abandon context.CancelCauseFunc, targets ...placed) *locationCheck {
	d := c.opts.LocationCheckDelay
	if d < 0 || len(targets) == 0 {
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	w := &locationCheck{cancel: cancel, done: make(chan struct{})}
	// The first timer is armed before the call is sent, not in the
	// goroutine: tests rely on it.
	fire, stopTimer := c.timer(d)
	go func() {
		defer close(w.done)
		for {
			select {
			case <-cctx.Done():
				stopTimer()
				return
			case <-fire:
			}
			for _, t := range targets {
				fresh, err := c.loc.Relocate(cctx, t.tab, t.row)
				if cctx.Err() != nil {
					return
				}
				if moved(t.tab, fresh, err) {
					w.moved = &t.tab
					abandon(errMoved)
					return
				}
			}
			// Unchanged, or no master answered: keep waiting, check again.
			fire, stopTimer = c.timer(d)
		}
	}()
	return w
}

// stop ends the check and waits for its goroutine. It returns the error
// to give the call when the check abandoned it (a rerouteError), or nil.
func (w *locationCheck) stop() error {
	if w == nil {
		return nil
	}
	w.cancel()
	<-w.done
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
