package tablet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Write stalls bound a tablet's active memtable when its flushes lag
// (docs/CONTRACTS.md "Write stalls"). A flush swaps the active memtable
// for an empty one only when the previous one is written out (one flush
// at a time, flushMu), so without a bound fast writers fill the active
// memtable for as long as a flush takes: many times MemtableSize. Instead
// a writer that finds the active memtable full waits, before it takes the
// gate, a row lock or the commit mutex (a flush needs them all), until
// the memtable is swapped. It waits for a swap rather than for the end of
// the running flush: between the end of one flush and the swap of the
// next the memtable would otherwise grow unchecked again, and a writer
// that stalls always asks for the flush that will swap it (requestFlush).
//
// The wait ends when the flush loop swaps the memtable, when the writer's
// context ends (its error), when the tablet closes (ErrClosed), or when
// the last flush failed and none is running (a full disk): then writers
// of a full memtable get an error wrapping ErrResourceExhausted and the
// flush's error, until a flush succeeds (the flush loop retries).
//
// A tablet with DisableBackgroundWork never stalls: nothing would swap
// its memtable but its owner's own Flush calls.
//
// Writers check the memtable before they insert, so it passes the bound
// by at most one batch of every writer in flight.

// stallFactor: writers stall once the active memtable holds stallFactor ×
// MemtableSize bytes. With 1 a tablet holds at most about two memtables
// (the one being flushed and a full active one), as pebble's default
// MemTableStopWritesThreshold allows. 2 was measured too: its memtables
// peaked up to twice as high (the engine benchmark's peak RSS 4-15 %
// above 1's) for insert rates the shared machine could not tell apart
// from 1's (docs/BENCHMARKS.md "Write stalls").
const stallFactor = 1

// flushState is what stalled writers watch. Tablet.mu protects it.
type flushState struct {
	// running is set while flushLocked runs (flushMu makes it one at a
	// time).
	running bool
	// err is the last flush's error, nil once one succeeds. A flush cut
	// short by its caller's context leaves it as it was: that says
	// nothing about the disk.
	err error
	// changed is closed and replaced when the active memtable is swapped
	// and when a flush ends, to wake stalled writers.
	changed chan struct{}
}

// changedLocked wakes the writers waiting on the flush state. mu held.
func (s *flushState) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// flushStarted marks a flush running; flushLocked calls it first.
func (t *Tablet) flushStarted() {
	t.mu.Lock()
	t.flush.running = true
	t.mu.Unlock()
}

// flushEnded records the outcome of the flush flushStarted marked and
// wakes stalled writers.
func (t *Tablet) flushEnded(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flush.running = false
	switch {
	case err == nil:
		t.flush.err = nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	default:
		t.flush.err = err
	}
	t.flush.changedLocked()
}

// awaitRoom stalls a writer while the active memtable is full (see the
// top of this file). It holds no lock while it waits.
func (t *Tablet) awaitRoom(ctx context.Context) error {
	if t.opts.DisableBackgroundWork {
		return nil
	}
	// Most writes find room: check without the lock. A memtable swapped
	// out meanwhile only sends the writer to the locked check below.
	if m := t.active.Load(); m != nil && m.bytes.Load() < t.stallAt {
		return nil
	}
	var start time.Time
	stalled := false
	end := func(err error) error {
		if stalled {
			d := t.now().Sub(start)
			t.stalls.Add(1)
			t.stallNanos.Add(int64(d))
			t.stalledWrite(WriteStallEvent{Duration: d, Err: err})
		}
		return err
	}
	for {
		t.mu.Lock()
		if t.mem == nil || t.closed.Load() {
			t.mu.Unlock()
			return end(ErrClosed)
		}
		held := t.mem.bytes.Load()
		running, ferr, changed := t.flush.running, t.flush.err, t.flush.changed
		t.mu.Unlock()
		if held < t.stallAt {
			return end(nil)
		}
		// Whether it waits or fails, the writer asks for the flush that
		// will swap the memtable: after a failure the flush loop retries
		// on its own, but a failed Flush of another caller asked for none.
		t.requestFlush()
		if ferr != nil && !running {
			return end(fmt.Errorf("%w: the memtable holds %d bytes, past its limit of %d, and flushing it failed: %w; writes resume once a flush succeeds: retry later",
				ErrResourceExhausted, held, t.stallAt, ferr))
		}
		if !stalled {
			stalled, start = true, t.now()
			if t.testHookStall != nil {
				t.testHookStall()
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return end(ctx.Err())
		case <-t.bgCtx.Done():
			return end(ErrClosed)
		}
	}
}

// WriteStallEvent describes one write stall (Events.WriteStalled).
type WriteStallEvent struct {
	// Duration is how long the writer waited.
	Duration time.Duration
	// Err is why the stall ended without room: the writer's context, the
	// tablet closing or a failed flush (ErrResourceExhausted); nil when
	// the writer went ahead.
	Err error
}

func (t *Tablet) stalledWrite(e WriteStallEvent) {
	if ev := t.opts.Events; ev != nil && ev.WriteStalled != nil {
		ev.WriteStalled(e)
	}
}
