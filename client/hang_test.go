package client

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestAttemptTimeoutRetriesAwayFromHungServer plays a paused tablet
// server: it accepts calls and never answers. Without a per-attempt
// timeout every caller without a deadline would stall until it woke.
// The attempts' timers fire when the test fires them, each once the hung
// server holds its call, so that no pace of the machine decides how many
// attempts reach the server (location checks are off: only the attempt
// timeout frees a call here).
func TestAttemptTimeoutRetriesAwayFromHungServer(t *testing.T) {
	c := newCluster(t, 2)
	const attempt = 200 * time.Millisecond // named in the errors; the timers are manual
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()},
		AttemptTimeout: attempt, Backoff: locatorBackoff(time.Millisecond), LocationCheckDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	timers := newManualTimers()
	cl.attemptTimer = timers.timer
	tbl := cl.Open("t")
	hung := c.servers[c.master.Tablets("t")[0].ServerAddress]
	var other *fakeServer
	for _, s := range c.servers {
		if s != hung {
			other = s
		}
	}
	hang := make(chan struct{})
	hung.mu.Lock()
	hung.hang = hang
	hung.mu.Unlock()
	t.Cleanup(func() { close(hang) })
	ctx := context.Background() // no deadline: only AttemptTimeout can save the caller
	// timeOut waits until the hung server holds one more call, then fires
	// that attempt's timer.
	timeOut := func(what string) {
		t.Helper()
		select {
		case <-hung.hungCalls:
		case <-time.After(waitLimit):
			t.Fatalf("%s: no attempt reached the hung server within %v", what, waitLimit)
		}
		timers.fire(t)
	}

	// A non-idempotent write is not retried: its outcome is unknown.
	done := make(chan error, 1)
	go func() {
		done <- tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), ServerTime, []byte("v")))
	}()
	timeOut("non-idempotent Apply")
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatalf("non-idempotent Apply still waiting %v after its attempt timed out", waitLimit)
	}
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "attempt timeout") || !strings.Contains(err.Error(), attempt.String()) {
		t.Errorf("non-idempotent Apply on a hung server = %v, want UNAVAILABLE naming the attempt timeout of %v", err, attempt)
	}
	if n := hung.callCount("hung"); n != 1 {
		t.Errorf("non-idempotent Apply was sent %d times, want 1", n)
	}

	// Safe calls retry past the timeout and follow the tablet once the
	// master moves it off the hung server.
	cases := []struct {
		name string
		call func() error
	}{
		{"Apply", func() error {
			return tbl.Apply(ctx, []byte("r"), NewMutation().Set("cf", []byte("q"), 5, []byte("v")))
		}},
		{"ApplyBulk", func() error {
			errs, err := tbl.ApplyBulk(ctx, [][]byte{[]byte("r"), []byte("s")},
				[]*Mutation{NewMutation().Set("cf", []byte("q"), 6, []byte("v")), NewMutation().Set("cf", []byte("q"), 6, []byte("w"))})
			for _, e := range errs {
				if e != nil {
					return e
				}
			}
			return err
		}},
		{"ReadRow", func() error {
			row, err := tbl.ReadRow(ctx, []byte("r"))
			if err == nil && len(row.Cells) == 0 {
				t.Errorf("ReadRow after the move found no cells")
			}
			return err
		}},
	}
	for _, tc := range cases {
		c.move("r", hung.addr)
		before := hung.callCount("hung")
		done := make(chan error, 1)
		go func() { done <- tc.call() }()
		// Two attempts time out on the hung server: the second comes
		// only if the client retried after the first.
		timeOut(tc.name + ", first attempt")
		timeOut(tc.name + ", second attempt")
		c.move("r", other.addr)
		// Attempts sent before the client re-located the tablet may still
		// reach the hung server: time them out too until the call ends.
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s = %v, want success once the tablet moved", tc.name, err)
				}
				break wait
			case <-hung.hungCalls:
				timers.fire(t)
			case <-time.After(waitLimit):
				t.Fatalf("%s still stalled %v after the tablet moved off the hung server", tc.name, waitLimit)
			}
		}
		if n := hung.callCount("hung") - before; n < 2 {
			t.Errorf("%s: %d attempts reached the hung server, want >= 2 (retries after each timeout)", tc.name, n)
		}
	}
}

// TestAttemptTimeoutCutsStalledStream: a scan whose server stops sending
// mid-stream resumes elsewhere after the last row it returned.
func TestAttemptTimeoutCutsStalledStream(t *testing.T) {
	c := newCluster(t, 2)
	const attempt = 200 * time.Millisecond
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()},
		AttemptTimeout: attempt, Backoff: locatorBackoff(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tbl := cl.Open("t")
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		if err := tbl.Apply(ctx, []byte(k), NewMutation().Set("cf", []byte("q"), 1, []byte(k))); err != nil {
			t.Fatal(err)
		}
	}
	hung := c.servers[c.master.Tablets("t")[0].ServerAddress]
	var other *fakeServer
	for _, s := range c.servers {
		if s != hung {
			other = s
		}
	}
	hung.mu.Lock()
	hung.stallAfter = 2 // send a, b, then go silent
	hung.mu.Unlock()
	it := tbl.ReadRows(ctx, nil)
	defer it.Close()
	if !it.Next() || string(it.Row().Key) != "a" {
		t.Fatalf("first row: %v", it.Err())
	}
	if !it.Next() || string(it.Row().Key) != "b" {
		t.Fatalf("second row: %v", it.Err())
	}
	// The server is now silent; the master moves the tablet away.
	c.move("a", other.addr)
	start := time.Now()
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for it.Next() {
			got = append(got, string(it.Row().Key))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * attempt):
		t.Fatal("the scan stalled on the hung server")
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < attempt/2 {
		t.Errorf("the scan resumed after %v, before the attempt timeout %v: the stall was not exercised", d, attempt)
	}
	if strings.Join(got, "") != "cdef" {
		t.Errorf("rows after the resume = %q, want c d e f", got)
	}
}
