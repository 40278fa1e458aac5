package tablet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
)

// Write stalls (stall.go): while a flush lags, writers of a full memtable
// wait for it instead of growing the memtable without bound; they give up
// on their context, on Close, and with RESOURCE_EXHAUSTED when the flush
// fails. Every test holds a flush in testHookFlush rather than relying on
// a flush being slow.

// stallRig is a tablet with background flushes whose first flush can be
// held mid-way, with a clock for stall durations that moves only when the
// test moves it.
type stallRig struct {
	t  *testing.T
	tb *Tablet
	fs *vfs.Faulty

	held    chan struct{} // closed when the first flush is held
	release chan struct{} // close to let it go on
	stalled chan struct{} // a token each time a writer starts to stall
	clock   atomic.Int64  // nanoseconds added to the stall clock
	ended   atomic.Int64  // stalls that ended (Events.WriteStalled)
}

// newStallRig opens a tablet whose active memtable holds memtable bytes
// before writers stall. With hold, its first flush waits for release
// (or the tablet's closing) before it writes anything.
func newStallRig(t *testing.T, memtable int64, hold bool) *stallRig {
	r := &stallRig{t: t, fs: vfs.NewFaulty(vfs.Default),
		held: make(chan struct{}), release: make(chan struct{}), stalled: make(chan struct{}, 1024)}
	opts := testOptions(t.TempDir())
	opts.FS = r.fs
	opts.DisableBackgroundWork = false
	opts.MemtableSize = memtable
	opts.Events = &Events{WriteStalled: func(WriteStallEvent) { r.ended.Add(1) }}
	r.tb = openTablet(t, opts)
	base := time.Unix(1e9, 0)
	r.tb.now = func() time.Time { return base.Add(time.Duration(r.clock.Load())) }
	r.tb.testHookStall = r.signalStall
	var once sync.Once
	r.tb.testHookFlush = func() {
		if !hold {
			return
		}
		first := false
		once.Do(func() { first = true })
		if !first {
			return
		}
		close(r.held)
		select {
		case <-r.release:
		case <-r.tb.bgCtx.Done():
		}
	}
	t.Cleanup(r.letGo)
	return r
}

// signalStall is testHookStall: a token for the test, dropped when the
// test is not reading them.
func (r *stallRig) signalStall() {
	select {
	case r.stalled <- struct{}{}:
	default:
	}
}

// letGo releases the held flush (once).
func (r *stallRig) letGo() {
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

// value is one write's payload of n bytes.
func stallValue(n int) string { return strings.Repeat("v", n) }

// fillUntilHeld writes rows "fill-NNNNN" of n-byte values until the
// active memtable is full (past MemtableSize they ask for a flush, which
// may swap the memtable meanwhile), and returns once that flush is held
// with how many rows it wrote. It writes nothing once the memtable is
// full: that write would stall behind the flush it waits for.
func (r *stallRig) fillUntilHeld(n int) int {
	r.t.Helper()
	i := 0
	for ; r.activeBytes() < r.tb.stallAt; i++ {
		apply(r.t, r.tb, fmt.Sprintf("fill-%05d", i), set("a", "q", 1, stallValue(n)))
	}
	r.tb.requestFlush() // a write asked for it unless it left exactly the limit
	<-r.held
	return i
}

// drainStalls forgets the stalls signalled so far.
func (r *stallRig) drainStalls() {
	for {
		select {
		case <-r.stalled:
		default:
			return
		}
	}
}

// activeBytes returns the bytes of the active memtable.
func (r *stallRig) activeBytes() int64 {
	r.tb.mu.Lock()
	defer r.tb.mu.Unlock()
	if r.tb.mem == nil {
		return 0
	}
	return r.tb.mem.bytes.Load()
}

// A writer that fills the memtable while a flush is held waits for it, and
// goes on once the flush is done and the memtable swapped; the stall is
// counted and timed.
func TestWriterStallsWhileTheFlushLagsAndResumesAfterIt(t *testing.T) {
	r := newStallRig(t, 16<<10, true)
	filled := r.fillUntilHeld(1 << 10)
	r.drainStalls()
	stallsBefore := r.tb.Stats().WriteStalls

	const rows = 64 // 64 KiB: four memtables' worth
	done := make(chan error, 1)
	go func() {
		for i := range rows {
			row := fmt.Sprintf("late-%05d", i)
			if err := r.tb.Apply(bg, []byte(row), []cell.Mutation{set("a", "q", 1, stallValue(1<<10))}); err != nil {
				done <- fmt.Errorf("Apply(%s): %w", row, err)
				return
			}
		}
		done <- nil
	}()
	// The writer waits: it cannot write all its rows, which do not fit in
	// the memtable while the flush is held.
	select {
	case <-r.stalled:
	case err := <-done:
		t.Fatalf("the writer finished (%v) without stalling while the flush was held", err)
	}
	if got := r.activeBytes(); got < r.tb.stallAt {
		t.Fatalf("a writer stalled with %d bytes in the active memtable, below the limit %d", got, r.tb.stallAt)
	}
	r.clock.Add(int64(5 * time.Second)) // the stall lasts 5 s by the stall clock
	r.letGo()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := r.tb.Stats()
	if st.WriteStalls <= stallsBefore {
		t.Fatalf("WriteStalls = %d, was %d before the stall", st.WriteStalls, stallsBefore)
	}
	if st.WriteStallTime != 5*time.Second {
		t.Fatalf("WriteStallTime = %v, want the 5s the stall clock moved while the writer waited", st.WriteStallTime)
	}
	if n := r.ended.Load(); uint64(n) != st.WriteStalls {
		t.Fatalf("Events.WriteStalled told of %d stalls, Stats counts %d", n, st.WriteStalls)
	}
	for i := 0; i < filled; i += 7 {
		row := fmt.Sprintf("fill-%05d", i)
		if got, want := readRow(t, r.tb, row, nil), "a:q@1="+stallValue(1<<10); got != want {
			t.Fatalf("row %s reads %d bytes, want its value", row, len(got))
		}
	}
	for i := 0; i < rows; i += 7 {
		row := fmt.Sprintf("late-%05d", i)
		if got, want := readRow(t, r.tb, row, nil), "a:q@1="+stallValue(1<<10); got != want {
			t.Fatalf("row %s reads %d bytes, want its value", row, len(got))
		}
	}
}

// stallOne starts a write of row under ctx that must stall, and returns
// the channel its result comes on once it has stalled.
func (r *stallRig) stallOne(ctx context.Context, row string) chan error {
	r.t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- r.tb.Apply(ctx, []byte(row), []cell.Mutation{set("a", "q", 1, stallValue(1<<10))})
	}()
	select {
	case <-r.stalled:
	case err := <-done:
		r.t.Fatalf("write of %s = %v without stalling on a full memtable", row, err)
	}
	return done
}

// fillToStall writes rows until the active memtable is full, while the
// first flush is held.
func (r *stallRig) fillToStall() {
	r.t.Helper()
	r.fillUntilHeld(1 << 10)
	for i := 0; r.activeBytes() < r.tb.stallAt; i++ {
		apply(r.t, r.tb, fmt.Sprintf("more-%05d", i), set("a", "q", 1, stallValue(1<<10)))
	}
	r.drainStalls()
}

// A stalled writer gives up with its context's error when the context
// ends, and with ErrClosed when the tablet closes; neither write is
// applied.
func TestStalledWriterGivesUpOnCancelAndOnClose(t *testing.T) {
	r := newStallRig(t, 16<<10, true)
	r.fillToStall()
	before := r.tb.Stats().WriteStalls

	ctx, cancel := context.WithCancel(bg)
	done := r.stallOne(ctx, "cancelled")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled write after cancel = %v, want context.Canceled", err)
	}
	if got := readRow(t, r.tb, "cancelled", nil); got != "" {
		t.Fatalf("the cancelled write reads %q", got)
	}

	done = r.stallOne(bg, "closed")
	if err := r.tb.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("stalled write after Close = %v, want ErrClosed", err)
	}
	if got := r.tb.Stats().WriteStalls - before; got != 2 {
		t.Fatalf("WriteStalls grew by %d, want the two that gave up", got)
	}
}

// When the flush writers wait for fails (a full disk), they get
// RESOURCE_EXHAUSTED naming the failure instead of waiting on, and so does
// every writer of the full memtable until a flush succeeds; then writes go
// on and nothing acknowledged is lost.
func TestFailedFlushTurnsStallsIntoResourceExhausted(t *testing.T) {
	r := newStallRig(t, 16<<10, true)
	r.fs.Set(failOn(vfs.OpCreate, sst(), vfs.NoSpace()))
	r.fillToStall()

	done := r.stallOne(bg, "stalled")
	r.letGo() // the held flush now fails on the full disk
	checkExhausted := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrResourceExhausted) || !errors.Is(err, syscall.ENOSPC) ||
			!strings.Contains(err.Error(), "flushing it failed") || !strings.Contains(err.Error(), "retry later") {
			t.Fatalf("%s = %v, want ErrResourceExhausted saying the flush failed with ENOSPC", what, err)
		}
	}
	checkExhausted("the stalled write", <-done)
	// Nothing changed: the next writer is refused too (at once, or after
	// waiting for a retry of the flush that fails again).
	checkExhausted("a later write", r.tb.Apply(bg, []byte("later"), []cell.Mutation{set("a", "q", 1, "x")}))
	for _, row := range []string{"stalled", "later"} {
		if got := readRow(t, r.tb, row, nil); got != "" {
			t.Fatalf("refused write %s reads %q", row, got)
		}
	}

	r.fs.Set(nil)
	// The first flush writes the memtable the failed one left, the second
	// swaps the full active one.
	for range 2 {
		if err := r.tb.Flush(bg); err != nil {
			t.Fatalf("Flush on the healthy disk: %v", err)
		}
	}
	apply(t, r.tb, "after", set("a", "q", 1, "x"))
	if got := readRow(t, r.tb, "after", nil); got != "a:q@1=x" {
		t.Fatalf("write after recovery reads %q", got)
	}
	if got := readRow(t, r.tb, "fill-00000", nil); got != "a:q@1="+stallValue(1<<10) {
		t.Fatalf("an acknowledged row reads %d bytes after the failed flush", len(got))
	}
}

// However many writers there are, the active memtable passes its limit by
// at most one batch of each writer: here eight writers, each batch at most
// a skiplist chunk (a family's list grows by one chunk per insert at
// most), first while a flush is held until all of them stall, then with
// flushes running as they come.
func TestMemtableBoundedWithManyWriters(t *testing.T) {
	const (
		writers   = 8
		valueSize = 60 << 10 // under maxChunk: an insert adds at most one chunk
		after     = 30       // rows each writer writes after the release
	)
	r := newStallRig(t, 512<<10, true)
	limit := r.tb.stallAt + writers*maxChunk
	var stalledNow atomic.Int64
	r.tb.testHookStall = func() { stalledNow.Add(1); r.signalStall() }
	r.tb.opts.Events.WriteStalled = func(WriteStallEvent) { stalledNow.Add(-1) }
	check := func(what string) bool {
		if got := r.activeBytes(); got > limit {
			t.Errorf("%s: the active memtable holds %d bytes, past the limit %d plus a chunk for each of %d writers (%d)", what, got, r.tb.stallAt, writers, limit)
			return false
		}
		return true
	}

	var released atomic.Bool
	var wg sync.WaitGroup
	acked := make([]int, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			left := after
			for i := 0; left > 0; i++ {
				if released.Load() {
					left--
				}
				row := fmt.Sprintf("w%d-%05d", w, i)
				if err := r.tb.Apply(bg, []byte(row), []cell.Mutation{set("a", "q", 1, stallValue(valueSize))}); err != nil {
					t.Errorf("Apply(%s): %v", row, err)
					return
				}
				acked[w] = i + 1
				if !check("after a write") {
					return
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	<-r.held
	// While the flush is held nothing swaps the memtable: once it is full
	// and every writer is in a stall, none can insert again. (A writer
	// woken by the swap before the hold counts until it looks at the
	// memtable again; finding it full, it waits on.)
	for stalledNow.Load() < writers || r.activeBytes() < r.tb.stallAt {
		select {
		case <-r.stalled:
		case <-finished:
			t.Fatal("the writers stopped while the flush was held")
		}
	}
	check("with every writer stalled")
	released.Store(true)
	r.letGo()
	<-finished
	if t.Failed() {
		return
	}
	total := 0
	for w := range writers {
		total += acked[w]
		for _, i := range []int{0, acked[w] / 2, acked[w] - 1} {
			row := fmt.Sprintf("w%d-%05d", w, i)
			if got := readRow(t, r.tb, row, nil); got != "a:q@1="+stallValue(valueSize) {
				t.Fatalf("acknowledged row %s reads %d bytes", row, len(got))
			}
		}
	}
	if got := strings.Count(scan(t, r.tb, ReadOptions{}), "{"); got != total {
		t.Fatalf("the tablet holds %d rows, the writers acknowledged %d", got, total)
	}
}

// A tablet without background work never stalls: nothing but its owner's
// Flush would make room.
func TestNoStallWithoutBackgroundWork(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.MemtableSize = 4 << 10
	tb := openTablet(t, opts)
	tb.testHookStall = func() { t.Error("a writer stalled") }
	for i := range 64 {
		apply(t, tb, fmt.Sprintf("r%03d", i), set("a", "q", 1, stallValue(1<<10)))
	}
	if got := tb.Stats().WriteStalls; got != 0 {
		t.Fatalf("WriteStalls = %d, want 0", got)
	}
}
