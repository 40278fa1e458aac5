package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
)

func TestParseSyncMode(t *testing.T) {
	for _, m := range []SyncMode{SyncAlways, SyncInterval, SyncNone, SyncBuffered} {
		got, err := ParseSyncMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseSyncMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if m, err := ParseSyncMode("Interval"); err != nil || m != SyncInterval {
		t.Errorf("ParseSyncMode(Interval) = %v, %v", m, err)
	}
	if _, err := ParseSyncMode("sometimes"); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("ParseSyncMode(sometimes) error = %v, want cell.ErrInvalid", err)
	}
	if _, err := Open(Options{}); !errors.Is(err, cell.ErrInvalid) {
		t.Errorf("Open without Dir: %v, want cell.ErrInvalid", err)
	}
}

func TestAppendReplayRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, mode := range []SyncMode{SyncAlways, SyncInterval, SyncNone, SyncBuffered} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			want := randomPayloads(r, 200, 300)
			l := mustOpen(t, Options{Dir: dir, SyncMode: mode})
			for _, p := range want {
				if err := l.Append(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := l.Append([]byte("late")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Append after Close: %v, want ErrClosed", err)
			}
			got, last, err := replayAll(t, dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			if last != 1 || !equalPayloads(got, want) {
				t.Fatalf("replay: last %d, %d records; want last 1, %d records equal", last, len(got), len(want))
			}
		})
	}
}

func TestReopenStartsNewSegmentAndReplaysBoth(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	if err := l.Append([]byte("one")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, _, err := replayAll(t, dir, 0); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, Options{Dir: dir})
	if l.seg != 2 {
		t.Fatalf("reopened log writes segment %d, want 2", l.seg)
	}
	if err := l.Append([]byte("two")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, last, err := replayAll(t, dir, 1)
	if err != nil || last != 2 || !equalPayloads(got, [][]byte{[]byte("one"), []byte("two")}) {
		t.Fatalf("replay = %q, last %d, %v", got, last, err)
	}
	got, _, err = replayAll(t, dir, 2)
	if err != nil || !equalPayloads(got, [][]byte{[]byte("two")}) {
		t.Fatalf("replay from 2 = %q, %v", got, err)
	}
}

// TestConcurrentAppendAllReplayed: 64 writers, every record replayed once and
// each writer's records in its own order.
func TestConcurrentAppendAllReplayed(t *testing.T) {
	const writers, perWriter = 64, 40
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir, SegmentSize: 16 << 10})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := l.Append(fmt.Appendf(nil, "%d/%d", w, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, last, err := replayAll(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last < 2 {
		t.Errorf("expected automatic rotation, last segment %d", last)
	}
	next := make([]int, writers)
	for _, p := range got {
		var w, i int
		if _, err := fmt.Sscanf(string(p), "%d/%d", &w, &i); err != nil {
			t.Fatalf("bad record %q", p)
		}
		if i != next[w] {
			t.Fatalf("writer %d: record %d replayed when %d was expected", w, i, next[w])
		}
		next[w]++
	}
	for w, n := range next {
		if n != perWriter {
			t.Fatalf("writer %d: %d records replayed, want %d", w, n, perWriter)
		}
	}
}

// TestWriteWaitKeepsCallOrder: the engine's two-phase form. Writes under a
// caller's lock number the records; the log replays them in that order.
func TestWriteWaitKeepsCallOrder(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	var mu sync.Mutex
	var seq int
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 20 {
				mu.Lock()
				seq++
				tk, err := l.Write(fmt.Appendf(nil, "%d", seq))
				mu.Unlock()
				if err == nil {
					err = l.Wait(tk)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	l.Close()
	got, _, err := replayAll(t, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		if string(p) != fmt.Sprint(i+1) {
			t.Fatalf("record %d is %q", i, p)
		}
	}
	if len(got) != 32*20 {
		t.Fatalf("%d records, want %d", len(got), 32*20)
	}
	if err := l.Wait(Ticket{}); err != nil {
		t.Fatalf("zero ticket after Close: %v", err)
	}
}

// TestGroupCommitSharesFsyncs: writers that arrive while an fsync runs
// share the next one. The first writer's fsync is held until 63 more
// writers have queued their records behind it; once it is released, a
// single further fsync makes all 63 durable.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	const writers = 64
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs})
	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && calls.Add(1) == 1 {
			close(held)
			<-release
		}
		return nil
	})
	l.fsyncs.Store(0)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer func() { unblock(); wg.Wait() }()
	appendOne := func() { errs <- l.Append([]byte("group commit")) }
	wg.Go(appendOne)
	<-held // the first writer's round is in its fsync
	for range writers - 1 {
		wg.Go(appendOne)
	}
	// Every record is queued (the writers are waiting, or about to) while
	// the first round still holds its fsync.
	for queued := uint64(0); queued < writers; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		queued = l.appended
		l.mu.Unlock()
	}
	if n := l.fsyncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs while the first was held, want 1", n)
	}
	unblock()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := l.fsyncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for %d records, want 2: the first writer's and one shared by the %d that queued behind it", n, writers, writers-1)
	}
	l.mu.Lock()
	synced := l.synced
	l.mu.Unlock()
	if synced != writers {
		t.Fatalf("%d records synced, want %d", synced, writers)
	}
}

// TestSyncedRoundGathersReadyWriters: a writer about to start a synced
// round first lets the writers that are ready to run append (gatherLocked),
// and they share its fsync instead of starting rounds of their own. Here
// the writers are started by the yield itself, which returns once their
// records are in.
func TestSyncedRoundGathersReadyWriters(t *testing.T) {
	const others = 8
	l := mustOpen(t, Options{Dir: t.TempDir()})
	l.fsyncs.Store(0)
	var wg sync.WaitGroup
	errs := make(chan error, others)
	var yields atomic.Int64
	gatherYield = func() {
		if yields.Add(1) > 1 {
			return
		}
		l.mu.Lock()
		start := l.appended
		l.mu.Unlock()
		for range others {
			wg.Go(func() { errs <- l.Append([]byte("gathered")) })
		}
		for n := start; n < start+others; time.Sleep(time.Millisecond) {
			l.mu.Lock()
			n = l.appended
			l.mu.Unlock()
		}
	}
	defer func() { gatherYield = runtime.Gosched }()
	if err := l.Append([]byte("leader")); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if yields.Load() == 0 {
		t.Fatal("the writer that started the round did not yield to others first")
	}
	if n := l.fsyncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs for the leader's record and %d appended while it gathered, want 1", n, others)
	}
}

// TestSyncAlwaysWaitsForFsync: Append does not return before its fsync ends.
func TestSyncAlwaysWaitsForFsync(t *testing.T) {
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	var returned atomic.Bool
	done := make(chan error)
	go func() {
		err := l.Append([]byte("x"))
		returned.Store(true)
		done <- err
	}()
	<-entered
	time.Sleep(20 * time.Millisecond)
	if returned.Load() {
		t.Fatal("Append returned while its fsync was still running")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ffs.Set(nil)
}

func TestSyncIntervalFsyncsInBackground(t *testing.T) {
	l := mustOpen(t, Options{Dir: t.TempDir(), SyncMode: SyncInterval, SyncInterval: 5 * time.Millisecond})
	l.fsyncs.Store(0)
	if err := l.Append([]byte("x")); err != nil {
		t.Fatal(err)
	}
	// Append returned once the record reached the OS, not after an fsync.
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		synced := l.synced
		l.mu.Unlock()
		if synced == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no background fsync within 5s")
		}
		time.Sleep(time.Millisecond)
	}
	if l.fsyncs.Load() == 0 {
		t.Fatal("record synced without an fsync")
	}
}

func TestSyncNoneWritesWithoutFsync(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir, SyncMode: SyncNone})
	l.fsyncs.Store(0)
	for range 10 {
		if err := l.Append([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.fsyncs.Load(); n != 0 {
		t.Fatalf("%d fsyncs under SyncNone", n)
	}
	// The records reached the operating system: a second reader sees them.
	if got, want := diskSize(t, dir), int64(headerLen+10*(frameHeaderLen+10)); got != want {
		t.Fatalf("file holds %d bytes, want %d", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := l.fsyncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs after Close, want 1", n)
	}
}

func TestRotateAndRemoveBefore(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	for i := range 5 {
		if err := l.Append(fmt.Appendf(nil, "a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	seg, err := l.Rotate()
	if err != nil || seg != 2 {
		t.Fatalf("Rotate = %d, %v; want 2", seg, err)
	}
	if got, want := l.Size(), diskSize(t, dir); got != want {
		t.Fatalf("Size = %d, files hold %d", got, want)
	}
	for i := range 3 {
		if err := l.Append(fmt.Appendf(nil, "b%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A Rotate with nothing written still starts a new segment.
	if seg, err = l.Rotate(); err != nil || seg != 3 {
		t.Fatalf("Rotate = %d, %v; want 3", seg, err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentPath(dir, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("segment 1 still there: %v", err)
	}
	if got, want := l.Size(), diskSize(t, dir); got != want {
		t.Fatalf("Size = %d after RemoveBefore, files hold %d", got, want)
	}
	if err := l.RemoveBefore(100); err != nil { // never removes the active segment
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentPath(dir, 3)); err != nil {
		t.Fatalf("active segment removed: %v", err)
	}
	if err := l.Append([]byte("c")); err != nil {
		t.Fatal(err)
	}
	if got, want := l.Size(), diskSize(t, dir); got != want {
		t.Fatalf("Size = %d, files hold %d", got, want)
	}
	l.Close()
	got, last, err := replayAll(t, dir, 3)
	if err != nil || last != 3 || !equalPayloads(got, [][]byte{[]byte("c")}) {
		t.Fatalf("replay from 3 = %q, last %d, %v", got, last, err)
	}
	if _, err := l.Rotate(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Rotate after Close: %v", err)
	}
}

func TestAutomaticRotationKeepsEveryRecord(t *testing.T) {
	r := newRand(t)
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir, SyncMode: SyncNone, SegmentSize: 1 << 10})
	want := randomPayloads(r, 300, 100)
	for _, p := range want {
		if err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if got, disk := l.Size(), diskSize(t, dir); got != disk {
		t.Fatalf("Size = %d, files hold %d", got, disk)
	}
	l.Close()
	got, last, err := replayAll(t, dir, 0)
	if err != nil || !equalPayloads(got, want) {
		t.Fatalf("replay: %d records (want %d), %v", len(got), len(want), err)
	}
	if last < 5 {
		t.Fatalf("only %d segments for %d bytes with 1 KiB segments", last, l.Size())
	}
}

var errInjected = errors.New("injected fsync failure")

// TestFailedFsyncPoisonsLog: after a failed fsync every later call fails with
// the error and no fsync is retried.
func TestFailedFsyncPoisonsLog(t *testing.T) {
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: dir, FS: ffs})
	var fail atomic.Bool
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && fail.Load() {
			return errInjected
		}
		return nil
	})
	tk, err := l.Write([]byte("durable"))
	if err != nil || l.Wait(tk) != nil {
		t.Fatal("first append failed")
	}
	fail.Store(true)
	if err := l.Append([]byte("lost")); !errors.Is(err, errInjected) {
		t.Fatalf("Append with failing fsync: %v", err)
	}
	n := l.fsyncs.Load()
	fail.Store(false) // a later fsync would succeed; the log must not try it
	if _, err := l.Write([]byte("x")); !errors.Is(err, errInjected) {
		t.Fatalf("Write after poison: %v", err)
	}
	if err := l.Wait(tk); !errors.Is(err, errInjected) {
		t.Fatalf("Wait after poison: %v", err)
	}
	if err := l.Append([]byte("x")); !errors.Is(err, errInjected) {
		t.Fatalf("Append after poison: %v", err)
	}
	if _, err := l.Rotate(); !errors.Is(err, errInjected) {
		t.Fatalf("Rotate after poison: %v", err)
	}
	if err := l.Close(); !errors.Is(err, errInjected) {
		t.Fatalf("Close after poison: %v", err)
	}
	if got := l.fsyncs.Load(); got != n {
		t.Fatalf("%d fsyncs after the failure; the log retried", got-n)
	}
	got, _, err := replayAll(t, dir, 0)
	if err != nil || len(got) < 1 || string(got[0]) != "durable" {
		t.Fatalf("replay after poison = %q, %v", got, err)
	}
}

// TestFailedFsyncFailsEveryWaiter: concurrent waiters of the failed round all
// see the error.
func TestFailedFsyncFailsEveryWaiter(t *testing.T) {
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs})
	ffs.Set(func(op vfs.Op, _ string) error {
		if op != vfs.OpSync {
			return nil
		}
		time.Sleep(time.Millisecond)
		return errInjected
	})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 16 {
		wg.Go(func() {
			if err := l.Append([]byte("x")); err == nil {
				ok.Add(1)
			} else if !errors.Is(err, errInjected) {
				t.Errorf("Append: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 0 {
		t.Fatalf("%d appends acknowledged although every fsync failed", ok.Load())
	}
}

// TestCloseFlushesUnwaitedWrites: records accepted by Write but never waited
// for are written and fsynced by Close; a large unwaited backlog is handed to
// the OS before Close so the buffer stays bounded.
func TestCloseFlushesUnwaitedWrites(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir, SyncMode: SyncNone})
	big := make([]byte, 64<<10)
	var want [][]byte
	for i := range 20 { // 1.25 MiB: past flushThreshold
		big[0] = byte(i)
		if _, err := l.Write(big); err != nil {
			t.Fatal(err)
		}
		want = append(want, bytes.Clone(big))
	}
	if got := diskSize(t, dir); got < flushThreshold {
		t.Fatalf("only %d bytes on disk after %d MiB of unwaited writes", got, len(want)*len(big)>>20)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayAll(t, dir, 0)
	if err != nil || !equalPayloads(got, want) {
		t.Fatalf("replay: %d records, %v", len(got), err)
	}
}

// TestRoundEndWakesOnlyItsWaiters: the end of a round wakes the queued
// waiters whose records it made durable, and one more to run the next
// round; the others sleep on. Writer 0's round is held in its fsync
// while 8 more queue records it does not cover; its end wakes one of
// them, whose round (held too) covers the 7 others: 8 wakes in all, one
// per waiter. A broadcast would wake all 8 at the first round's end, and
// the 7 that went back to sleep again at the second's. No queued writer
// returns before the fsync of its record ends.
func TestRoundEndWakesOnlyItsWaiters(t *testing.T) {
	const queued = 8
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs})
	entered := make(chan int, 2)
	release := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var calls atomic.Int64
	ffs.Set(func(op vfs.Op, _ string) error {
		if op != vfs.OpSync {
			return nil
		}
		if n := int(calls.Add(1)); n <= 2 {
			entered <- n
			<-release[n-1]
		}
		return nil
	})
	var wg sync.WaitGroup
	first, errs := make(chan error, 1), make(chan error, queued)
	defer func() {
		for _, r := range release {
			select {
			case <-r:
			default:
				close(r)
			}
		}
		wg.Wait()
	}()
	wg.Go(func() { first <- l.Append([]byte("first")) })
	<-entered // writer 0's round is in its fsync
	for range queued {
		wg.Go(func() { errs <- l.Append([]byte("queued")) })
	}
	for waiting := 0; waiting < queued; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		waiting = len(l.waiters)
		l.mu.Unlock()
	}
	close(release[0])
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered: // the second round is in its fsync
	case err := <-errs:
		t.Fatalf("a queued writer returned (%v) before any fsync of its record", err)
	}
	select {
	case err := <-errs:
		t.Fatalf("a queued writer returned (%v) while the fsync of its record was held", err)
	default:
	}
	close(release[1])
	for range queued {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := l.fsyncs.Load(); n < 2 {
		t.Fatalf("%d fsyncs, want at least the 2 rounds", n)
	}
	if n := l.wakes.Load(); n != queued {
		t.Fatalf("queued waiters were woken %d times, want %d: once each, by the round that made their record durable or to run the next one", n, queued)
	}
}
