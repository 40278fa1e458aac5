package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// stallGuard bounds how long a scan may wait on a client that does not
// read. A Send blocks while the stream's flow-control window is full, and
// gRPC gives a handler no way to give up on a blocked Send. So the scan
// runs in its own goroutine (run) and every Send arms a timer: when one
// blocks past the timeout, the handler returns at once; gRPC then resets
// the stream, which fails the blocked Send, and the scan goroutine
// unwinds, freeing its slot, iterator and buffers.
type stallGuard struct {
	tabulapb.TabletServer_ReadRowsServer
	timeout time.Duration
	stalled chan struct{}
	once    sync.Once
}

func newStallGuard(stream tabulapb.TabletServer_ReadRowsServer, timeout time.Duration) *stallGuard {
	return &stallGuard{TabletServer_ReadRowsServer: stream, timeout: timeout, stalled: make(chan struct{})}
}

// Send sends m, marking the stream stalled if that takes past the timeout.
func (g *stallGuard) Send(m *tabulapb.ReadRowsResponse) error {
	return g.guard(func() error { return g.TabletServer_ReadRowsServer.Send(m) })
}

// SendMsg is Send for a message of any type (the scan's encoded rows,
// convert.RowsMessage).
func (g *stallGuard) SendMsg(m any) error {
	return g.guard(func() error { return g.TabletServer_ReadRowsServer.SendMsg(m) })
}

// guard runs send, marking the stream stalled if it takes past the
// timeout.
func (g *stallGuard) guard(send func() error) error {
	t := time.AfterFunc(g.timeout, func() { g.once.Do(func() { close(g.stalled) }) })
	err := send()
	t.Stop()
	return err
}

// run runs scan in a goroutine of the server's work group and returns
// its error, or an error right away when a Send stalls; the goroutine then
// ends after gRPC has reset the stream. When the work group no longer
// starts goroutines (the server is closing) scan does not run and run
// returns errScanNotStarted.
func (g *stallGuard) run(work *group, scan func() error) error {
	done := make(chan error, 1)
	if !work.run(func(context.Context) { done <- scan() }) {
		return errScanNotStarted
	}
	select {
	case err := <-done:
		return err
	case <-g.stalled:
		return &stalledError{timeout: g.timeout}
	}
}

// errScanNotStarted is run's answer when the server is closing: the scan
// never ran.
var errScanNotStarted = fmt.Errorf("%w: the scan did not start", ErrClosed)

// stalledError ends a scan whose client stopped reading (UNAVAILABLE).
type stalledError struct{ timeout time.Duration }

func (e *stalledError) Error() string {
	return fmt.Sprintf("the client read nothing for %s, so the scan was ended to free its resources; read it again from the last row received (the Go client does)", e.timeout)
}

func isStalled(err error) bool {
	var e *stalledError
	return errors.As(err, &e)
}
