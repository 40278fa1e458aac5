package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// holdWrites makes the segment writes of ffs (from now on) block until
// release is called, the first one closing held when it starts, and counts
// them in n. A test that fails before it releases them releases them when
// it ends, so that its log can close.
func holdWrites(t *testing.T, ffs *vfs.Faulty, n *atomic.Int64) (held chan struct{}, release func()) {
	held, gate := make(chan struct{}), make(chan struct{})
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite {
			if n.Add(1) == 1 {
				close(held)
			}
			<-gate
		}
		return nil
	})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return held, release
}

// TestSyncBufferedSharesWritesOfOneWriter: while the flusher's write(2) of
// the first record is held, one writer's next 99 Write+Wait pairs return
// at once (acknowledged from the buffer), and once the write is released
// a single further write(2) carries all 99.
func TestSyncBufferedSharesWritesOfOneWriter(t *testing.T) {
	const records = 100
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: dir, FS: ffs, SyncMode: SyncBuffered})
	var writes atomic.Int64
	held, release := holdWrites(t, ffs, &writes)
	var want [][]byte
	for i := range records {
		p := fmt.Appendf(nil, "record %d", i)
		want = append(want, p)
		if err := l.Append(p); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-held // the flusher writes record 0 (and nothing else yet)
		}
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes started before the first returned, want 1", n)
	}
	release()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 2 {
		t.Fatalf("%d write calls for %d sequential appends, want 2: the first record's and one for the %d buffered behind it", n, records, records-1)
	}
	got, _, err := replayAll(t, dir, 0)
	if err != nil || !equalPayloads(got, want) {
		t.Fatalf("replay: %d records (want %d), %v", len(got), len(want), err)
	}
}

// TestSyncBufferedBlocksPastBufferSize: while a write is held, Write
// accepts records only until BufferSize bytes are unwritten, then blocks;
// releasing the write lets the writer finish.
func TestSyncBufferedBlocksPastBufferSize(t *testing.T) {
	const payloadLen, bufferSize, records = 100, 1000, 50
	frame := frameHeaderLen + payloadLen
	// Accepted while unwritten < bufferSize: the held record, then enough
	// to reach bufferSize.
	maxAccepted := uint64((bufferSize + frame - 1) / frame)
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: dir, FS: ffs, SyncMode: SyncBuffered, BufferSize: bufferSize})
	var writes atomic.Int64
	held, release := holdWrites(t, ffs, &writes)
	done := make(chan error, 1)
	go func() {
		for range records {
			if err := l.Append(make([]byte, payloadLen)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	<-held
	for accepted := uint64(0); accepted < maxAccepted; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		accepted = l.appended
		l.mu.Unlock()
	}
	time.Sleep(10 * time.Millisecond) // give a broken bound the chance to show
	l.mu.Lock()
	accepted, unwritten := l.appended, len(l.buf)+l.inflight
	l.mu.Unlock()
	if accepted != maxAccepted || unwritten >= bufferSize+frame {
		t.Fatalf("%d records (%d bytes) accepted while the write was held, want %d (< %d bytes)", accepted, unwritten, maxAccepted, bufferSize+frame)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayAll(t, dir, 0)
	if err != nil || len(got) != records {
		t.Fatalf("replay: %d records (want %d), %v", len(got), records, err)
	}
}

// TestSyncBufferedCloseDrains: Close waits for the flusher's held write,
// then writes and fsyncs everything still buffered.
func TestSyncBufferedCloseDrains(t *testing.T) {
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: dir, FS: ffs, SyncMode: SyncBuffered})
	var writes atomic.Int64
	held, release := holdWrites(t, ffs, &writes)
	want := [][]byte{[]byte("first")}
	if err := l.Append(want[0]); err != nil {
		t.Fatal(err)
	}
	<-held
	for i := range 20 {
		want = append(want, fmt.Appendf(nil, "buffered %d", i))
		if err := l.Append(want[len(want)-1]); err != nil {
			t.Fatal(err)
		}
	}
	l.fsyncs.Store(0)
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := l.fsyncs.Load(); n != 1 {
		t.Fatalf("%d fsyncs by Close, want 1", n)
	}
	got, _, err := replayAll(t, dir, 0)
	if err != nil || !equalPayloads(got, want) {
		t.Fatalf("replay: %q, %v", got, err)
	}
	if _, err := l.Write([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
}

// TestSyncBufferedFailedWritePoisonsLog: a failed background write poisons
// the log: the writer blocked on a full buffer, and every later Write,
// Wait, Sync and Close, return the error, and nothing is retried.
func TestSyncBufferedFailedWritePoisonsLog(t *testing.T) {
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs, SyncMode: SyncBuffered, BufferSize: 100})
	held, release := make(chan struct{}), make(chan struct{})
	var writes atomic.Int64
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpWrite {
			if writes.Add(1) == 1 {
				close(held)
				<-release
			}
			return errInjected
		}
		return nil
	})
	tk, err := l.Write(make([]byte, 200)) // past BufferSize: the next Write blocks
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(tk); err != nil {
		t.Fatalf("Wait before the write failed: %v", err)
	}
	<-held
	blocked := make(chan error, 1)
	go func() {
		_, err := l.Write([]byte("blocked"))
		blocked <- err
	}()
	close(release)
	if err := <-blocked; !errors.Is(err, errInjected) {
		t.Fatalf("Write blocked on a full buffer: %v, want the write error", err)
	}
	if _, err := l.Write([]byte("x")); !errors.Is(err, errInjected) {
		t.Fatalf("Write after poison: %v", err)
	}
	if err := l.Wait(tk); !errors.Is(err, errInjected) {
		t.Fatalf("Wait after poison: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, errInjected) {
		t.Fatalf("Sync after poison: %v", err)
	}
	if err := l.Close(); !errors.Is(err, errInjected) {
		t.Fatalf("Close after poison: %v", err)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d write calls, want 1: a poisoned log writes nothing more", n)
	}
}

// crashFS passes files through to the local disk but gates every segment
// write on a permit, so a test decides how far the flusher gets, and
// crash freezes the files: what they hold then is what the operating
// system had when the process died.
type crashFS struct {
	vfs.FS
	gated   atomic.Bool // writes need a permit (after Open)
	permits chan struct{}
	dead    chan struct{}

	// mu protects crashed; a write holds it while it lands, so a write
	// lands whole before a crash or not at all.
	mu      sync.Mutex
	crashed bool
}

var errCrashed = errors.New("the process crashed")

func (c *crashFS) Create(name string) (vfs.Writable, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return nil, errCrashed
	}
	w, err := c.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &crashWriter{Writable: w, c: c}, nil
}

// Remove does nothing once the process crashed: a dead process deletes no
// file (a segment whose creation failed after the crash was being removed
// while crash copied it).
func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed {
		return errCrashed
	}
	return c.FS.Remove(name)
}

// crash freezes the files of dir and copies them to snap.
func (c *crashFS) crash(t *testing.T, dir, snap string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashed = true
	close(c.dead)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type crashWriter struct {
	vfs.Writable
	c *crashFS
}

func (w *crashWriter) Write(p []byte) (int, error) {
	if w.c.gated.Load() {
		select {
		case <-w.c.permits:
		case <-w.c.dead:
			return 0, errCrashed
		}
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.crashed {
		return 0, errCrashed
	}
	return w.Writable.Write(p)
}

func (w *crashWriter) Sync() error {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.crashed {
		return errCrashed
	}
	return w.Writable.Sync()
}

// TestSyncBufferedCrashModel: one writer appends random records (with
// random Syncs and Rotates) while the test hands the flusher write permits
// at random, then the process crashes at a random point (or the log is
// closed). What the files hold must replay as a prefix of the records
// written, keep every record a returned Sync covered, and lose, of the
// acknowledged records, fewer than BufferSize bytes plus one record;
// after Close, every record is there.
func TestSyncBufferedCrashModel(t *testing.T) {
	r := newRand(t)
	for round := range 40 {
		crash := round%4 != 3
		bufferSize := 64 + r.IntN(4096)
		maxLen := 1 + r.IntN(400)
		records := randomPayloads(r, 50+r.IntN(300), maxLen)
		grants := r.IntN(2 * len(records))
		ops := make([]int, len(records)) // 0: Append, 1: Append then Sync, 2: Append then Rotate
		for i := range ops {
			switch x := r.IntN(40); {
			case x == 0:
				ops[i] = 1
			case x == 1:
				ops[i] = 2
			}
		}

		dir := filepath.Join(t.TempDir(), "log")
		cfs := &crashFS{FS: vfs.Default, permits: make(chan struct{}), dead: make(chan struct{})}
		l, err := Open(Options{Dir: dir, FS: cfs, SyncMode: SyncBuffered, BufferSize: bufferSize})
		if err != nil {
			t.Fatal(err)
		}
		cfs.gated.Store(true)
		var mu sync.Mutex
		acked, synced := 0, 0
		writerDone := make(chan struct{})
		go func() {
			defer close(writerDone)
			for i, p := range records {
				if err := l.Append(p); err != nil {
					return
				}
				mu.Lock()
				acked = i + 1
				mu.Unlock()
				var err error
				switch ops[i] {
				case 1:
					err = l.Sync()
				case 2:
					_, err = l.Rotate()
				}
				if err != nil {
					return
				}
				if ops[i] != 0 {
					mu.Lock()
					synced = i + 1
					mu.Unlock()
				}
			}
		}()
	grant:
		for g := 0; g < grants || !crash; g++ {
			select {
			case cfs.permits <- struct{}{}:
			case <-writerDone:
				break grant
			}
		}
		snap := filepath.Join(t.TempDir(), "snap")
		if crash {
			cfs.crash(t, dir, snap)
			<-writerDone
			l.Close() // a crashed process closes nothing; this only stops the flusher
		} else {
			go func() { // Close's own write needs a permit
				for {
					select {
					case cfs.permits <- struct{}{}:
					case <-cfs.dead:
						return
					}
				}
			}()
			err := l.Close()
			close(cfs.dead)
			if err != nil {
				t.Fatalf("round %d: Close: %v", round, err)
			}
			snap = dir
		}

		got, _, err := replayAll(t, snap, 0)
		if err != nil {
			t.Fatalf("round %d: replay: %v", round, err)
		}
		mu.Lock()
		a, s := acked, synced
		mu.Unlock()
		if len(got) > len(records) || !equalPayloads(got, records[:len(got)]) {
			t.Fatalf("round %d: the replayed %d records are not a prefix of the %d written", round, len(got), len(records))
		}
		if !crash && len(got) != len(records) {
			t.Fatalf("round %d: %d records after Close, want all %d", round, len(got), len(records))
		}
		if len(got) < s {
			t.Fatalf("round %d: %d records replayed, but a Sync returned after %d", round, len(got), s)
		}
		lost, biggest := 0, 0
		for _, p := range records[min(len(got), a):a] {
			lost += frameHeaderLen + len(p)
			biggest = max(biggest, frameHeaderLen+len(p))
		}
		if lost >= bufferSize+biggest {
			t.Fatalf("round %d: the crash lost %d bytes of acknowledged records, BufferSize is %d", round, lost, bufferSize)
		}
	}
}

// TestSyncNoneWritersShareWrites: group commit of the write itself.
// Under SyncNone, writers whose records arrive while a write(2) runs are
// acknowledged together by the next one: with the first writer's write
// held until 63 more have queued, 64 appends take 2 write calls.
func TestSyncNoneWritersShareWrites(t *testing.T) {
	const writers = 64
	dir := t.TempDir()
	ffs := vfs.NewFaulty(vfs.Default)
	l := mustOpen(t, Options{Dir: dir, FS: ffs, SyncMode: SyncNone})
	var writes atomic.Int64
	held, release := holdWrites(t, ffs, &writes)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	defer func() { release(); wg.Wait() }()
	appendOne := func() { errs <- l.Append([]byte("shared write")) }
	wg.Go(appendOne)
	<-held
	for range writers - 1 {
		wg.Go(appendOne)
	}
	for queued := uint64(0); queued < writers; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		queued = l.appended
		l.mu.Unlock()
	}
	release()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := writes.Load(); n != 2 {
		t.Fatalf("%d write calls for %d concurrent appends, want 2: the first writer's and one shared by the %d that queued behind it", n, writers, writers-1)
	}
}
