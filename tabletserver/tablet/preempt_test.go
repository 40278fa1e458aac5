package tablet

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// An operator's major compaction does not wait for a background
// compaction in flight: it cancels it (nothing of it is published) and
// background compactions asked for while it runs do nothing.
func TestMajorCompactionPreemptsBackground(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.L0Trigger = 2
	tb := openTablet(t, opts)
	for i := range 4 {
		apply(t, tb, fmt.Sprint("r", i), set("a", "q", 1, fmt.Sprint("v", i)))
		// Each file spans the rows of the others: four sorted runs.
		apply(t, tb, "z", set("a", "q", int64(i+1), "z"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	started, release := make(chan struct{}), make(chan struct{})
	var calls int
	var cause error
	var duringMajor error
	tb.testHookCompacting = func(ctx context.Context, major bool) {
		calls++ // compactions of a tablet run one at a time
		switch calls {
		case 1: // the background compaction: runs until cancelled
			close(started)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-release:
			}
		case 2: // the major compaction of "a"
			if !major {
				t.Errorf("second compaction is not major")
			}
			duringMajor = tb.backgroundCompact(bg)
		}
	}
	bgDone := make(chan error, 1)
	go func() { bgDone <- tb.backgroundCompact(bg) }()
	<-started
	majorDone := make(chan error, 1)
	go func() { majorDone <- tb.Compact(bg, true) }()
	select {
	case err := <-majorDone:
		if err != nil {
			t.Fatalf("Compact(major): %v", err)
		}
	case <-time.After(time.Minute): // a hang, not a speed limit
		close(release)
		<-majorDone
		t.Fatal("the major compaction waited for the background one")
	}
	if err := <-bgDone; err != nil {
		t.Fatalf("preempted background compaction returned %v", err)
	}
	if !errors.Is(cause, errPreempted) {
		t.Fatalf("background compaction cancelled with %v, want errPreempted", cause)
	}
	if duringMajor != nil || calls != 2 {
		t.Fatalf("background compaction during the major one: err %v, %d compactions ran, want 2", duringMajor, calls)
	}
	v, err := tb.currentVersion()
	if err != nil {
		t.Fatal(err)
	}
	n := len(v.files["a"])
	v.unref()
	if n != 1 {
		t.Fatalf("family a has %d files after the major compaction, want 1", n)
	}
	for i := range 4 {
		row := fmt.Sprint("r", i)
		if got, want := readRow(t, tb, row, nil), fmt.Sprintf("a:q@1=v%d", i); got != want {
			t.Fatalf("row %s = %q, want %q", row, got, want)
		}
	}
	// Background compactions run again once the major one is done.
	tb.testHookCompacting = nil
	if err := tb.backgroundCompact(bg); err != nil {
		t.Fatal(err)
	}
}
