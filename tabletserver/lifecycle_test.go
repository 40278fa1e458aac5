package tabletserver

import (
	"context"
	"testing"
)

// A group's goroutines see its context end at stop, stop waits for them,
// and a stopped group starts nothing more: nothing runs behind Close.
func TestGroupStopCancelsWaitsAndRefuses(t *testing.T) {
	var g group
	g.start(context.Background())
	started := make(chan struct{})
	ended := false
	if !g.run(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		ended = true
	}) {
		t.Fatal("a running group refused a goroutine")
	}
	<-started
	g.stop()
	if !ended {
		t.Fatal("stop returned before its goroutine ended")
	}
	if g.run(func(context.Context) { t.Error("a goroutine ran after stop") }) {
		t.Fatal("a stopped group started a goroutine")
	}
	g.stop() // a second stop is harmless
}

// The work group's context is derived from the lease group's (the root):
// stopping work leaves the lease loop's context alive, stopping the root
// ends both.
func TestWorkContextEndsWithTheRoot(t *testing.T) {
	var lease, work group
	lease.start(context.Background())
	work.start(lease.ctx)
	work.stop()
	if lease.ctx.Err() != nil {
		t.Fatal("stopping the work group ended the root context")
	}
	var other group
	other.start(lease.ctx)
	lease.stop()
	if other.ctx.Err() == nil {
		t.Fatal("a context under the root outlived it")
	}
	other.stop()
}
