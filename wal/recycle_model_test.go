package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// TestRecyclingCrashModel runs a log through many lives, each a Log with
// random segment sizes and pool sizes writing records of random sizes,
// rotating (some rotations are flushes, which move the replay point and
// remove the segments before it, so files are recycled), and ending in a
// clean Close or one of the crashes a process or machine can have:
//
//   - killed between two writes (files as they are, stale bytes after
//     the active segment's records);
//   - killed while a record was being written (a prefix of it on disk);
//   - the same with the file then cut at a random offset after the
//     acknowledged records (what a machine crash keeps of the stale
//     bytes);
//   - killed in a rotation after the closing segment was cut and a
//     pooled file renamed to the next segment's name, before its new
//     header reached the disk (none of it, or a torn part);
//   - killed in a rotation before the closing segment was cut;
//   - killed at any call that changes a file (a random one): the call
//     and every later one do nothing (a write may land in part), so the
//     files stay as the Log's own steps left them.
//
// Before each life a recovering reader (package sharedlog's way: the
// files unchanged) and then Replay (the engine's way: torn tails cut)
// must return exactly the acknowledged records since the replay point,
// in order (and the record being appended when the process died, if it
// reached the file whole): none lost, none of an earlier life. The seed
// is printed (-seed replays a failure).
func TestRecyclingCrashModel(t *testing.T) {
	r := newRand(t)
	dir := t.TempDir()
	m := &crashModel{t: t, r: r, dir: dir}
	lives := 60
	if testing.Short() {
		lives = 15
	}
	for life := range lives {
		m.check(fmt.Sprintf("before life %d", life))
		m.live()
	}
	m.check("at the end")
	t.Logf("%d rotations reused a pooled file; %d lives ended with stale bytes after the active segment's records", m.recycled, m.stale)
	if !testing.Short() && (m.recycled == 0 || m.stale == 0) {
		t.Fatal("the model recycled no file, or left no stale bytes: it tests nothing")
	}
}

type crashModel struct {
	t   *testing.T
	r   *rand.Rand
	dir string
	// from is the replay point; acked the records acknowledged since;
	// inflight the record whose Append the process died in, if any.
	from     uint64
	acked    [][]byte
	inflight []byte
	next     int // the number of the next record
	// recycled counts rotations that reused a pooled file, stale the
	// lives that ended with stale bytes after the active segment's
	// records: the model must exercise both.
	recycled, stale int
}

// check replays the log both ways and compares with the model.
func (m *crashModel) check(when string) {
	t := m.t
	t.Helper()
	got := readLikeARecoveringServer(t, m.dir, m.from)
	if m.inflight != nil && equalPayloads(got, append(m.acked[:len(m.acked):len(m.acked)], m.inflight)) {
		// It reached the file whole before the process died: it is in
		// the log now, as an acknowledged record is.
		m.acked = append(m.acked, m.inflight)
	}
	m.inflight = nil
	if !equalPayloads(got, m.acked) {
		t.Fatalf("%s: a recovering reader got %s, want %s", when, describe(got), describe(m.acked))
	}
	got, _, err := replayAll(t, m.dir, m.from)
	if err != nil {
		t.Fatalf("%s: replay: %v", when, err)
	}
	if !equalPayloads(got, m.acked) {
		t.Fatalf("%s: replay got %s, want %s", when, describe(got), describe(m.acked))
	}
	// Replay cut every torn tail: a second one reads the same.
	if got, _, err := replayAll(t, m.dir, m.from); err != nil || !equalPayloads(got, m.acked) {
		t.Fatalf("%s: second replay got %s, %v", when, describe(got), err)
	}
}

// describe names payloads by their record numbers.
func describe(ps [][]byte) string {
	var names []string
	for i, p := range ps {
		if i == 6 && len(ps) > 9 {
			names = append(names, "...")
			i, p = len(ps)-1, ps[len(ps)-1]
		} else if i > 6 && len(ps) > 9 {
			continue
		}
		name, _, _ := bytes.Cut(p, []byte(" "))
		names = append(names, string(name))
	}
	return fmt.Sprintf("%d records %v", len(ps), names)
}

// payload returns record i's payload: its number, then random bytes of a
// random length (mostly short, sometimes a few KiB, so that files of
// different lives differ in length and stale records follow new ones).
func (m *crashModel) payload() []byte {
	n := m.r.IntN(200)
	if m.r.IntN(8) == 0 {
		n = m.r.IntN(6000)
	}
	p := fmt.Appendf(nil, "r%d ", m.next)
	m.next++
	for range n {
		p = append(p, byte(m.r.Uint32()))
	}
	return p
}

// live runs one Log until a clean Close or a crash.
func (m *crashModel) live() {
	t, r := m.t, m.r
	fsys := &stopFS{r: r}
	if r.IntN(3) == 0 {
		fsys.stopAt = 1 + r.IntN(300) // the process dies at this call
	}
	opts := Options{
		Dir:             m.dir,
		FS:              fsys,
		SegmentSize:     []int64{512, 2 << 10, 16 << 10}[r.IntN(3)],
		RecycleSegments: []int{-1, 1, 2, 3}[r.IntN(4)],
	}
	l, err := Open(opts)
	if fsys.died(t, err) {
		return
	}
	for range 20 + r.IntN(80) {
		switch x := r.IntN(20); {
		case x < 16:
			p := m.payload()
			if err := l.Append(p); fsys.died(t, err) {
				m.inflight = p
				l.Close()
				return
			}
			m.acked = append(m.acked, p)
		case x < 19: // a flush
			pool := len(l.pool)
			seg, err := l.Rotate()
			if fsys.died(t, err) {
				l.Close()
				return
			}
			if len(l.pool) < pool {
				m.recycled++
			}
			// The manifest now names seg: what came before is flushed.
			m.from, m.acked = seg, nil
			if err := l.RemoveBefore(seg); fsys.died(t, err) {
				l.Close()
				return
			}
		default: // a rotation only
			if _, err := l.Rotate(); fsys.died(t, err) {
				l.Close()
				return
			}
		}
	}
	if fsys.stopAt > 0 {
		// The process dies later (or never, if Close's calls are fewer).
		l.Close()
		return
	}
	m.end(l)
}

// stopFS is the local disk for a process that dies at its stopAt-th call
// that changes a file (0: never): that call and every later one fail
// without effect, except that a write that dies may land in part, so
// the files stay as the process left them (its page cache survives).
type stopFS struct {
	r      *rand.Rand
	calls  int
	stopAt int
	// afterReuse, when set, makes the process die at the call after the
	// next Reuse (the new header's write).
	afterReuse bool
}

var errDied = errors.New("the process died")

// step counts a mutating call and says whether it dies.
func (s *stopFS) step() bool {
	s.calls++
	return s.stopAt > 0 && s.calls >= s.stopAt
}

// died reports whether err says the process died, and fails the test on
// any other error.
func (s *stopFS) died(t *testing.T, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, errDied) {
		t.Fatal(err)
	}
	return err != nil
}

func (s *stopFS) do(f func() error) error {
	if s.step() {
		return errDied
	}
	return f()
}

func (s *stopFS) Create(name string) (vfs.Writable, error) {
	if s.step() {
		return nil, errDied
	}
	w, err := vfs.Default.Create(name)
	if err != nil {
		return nil, err
	}
	return &stopWriter{Writable: w, s: s}, nil
}

func (s *stopFS) Reuse(oldname, newname string) (vfs.Writable, error) {
	if s.step() {
		return nil, vfs.NotApplied(errDied)
	}
	w, err := vfs.Default.(vfs.Reuser).Reuse(oldname, newname)
	if err != nil {
		return nil, err
	}
	if s.afterReuse {
		s.stopAt = s.calls + 1
	}
	return &stopWriter{Writable: w, s: s}, nil
}

func (s *stopFS) Open(name string) (vfs.Readable, error) { return vfs.Default.Open(name) }
func (s *stopFS) Truncate(name string, size int64) error {
	return s.do(func() error { return vfs.Default.Truncate(name, size) })
}
func (s *stopFS) Remove(name string) error {
	return s.do(func() error { return vfs.Default.Remove(name) })
}
func (s *stopFS) RemoveAll(name string) error {
	return s.do(func() error { return vfs.Default.RemoveAll(name) })
}
func (s *stopFS) Rename(oldname, newname string) error {
	return s.do(func() error { return vfs.Default.Rename(oldname, newname) })
}
func (s *stopFS) MkdirAll(dir string) error {
	return s.do(func() error { return vfs.Default.MkdirAll(dir) })
}
func (s *stopFS) List(dir string) ([]vfs.Entry, error) { return vfs.Default.List(dir) }
func (s *stopFS) Stat(name string) (vfs.Info, error)   { return vfs.Default.Stat(name) }
func (s *stopFS) SyncDir(dir string) error {
	return s.do(func() error { return vfs.Default.SyncDir(dir) })
}

type stopWriter struct {
	vfs.Writable
	s *stopFS
}

func (w *stopWriter) Write(p []byte) (int, error) {
	if w.s.step() {
		n := w.s.r.IntN(len(p) + 1) // what landed before the process died
		w.Writable.Write(p[:n])
		return 0, errDied
	}
	return w.Writable.Write(p)
}

func (w *stopWriter) Sync() error { return w.s.do(w.Writable.Sync) }

// end ends l's life, cleanly or in a crash.
func (m *crashModel) end(l *Log) {
	t, r := m.t, m.r
	active := segmentPath(m.dir, l.Segment())
	written := l.activeBytes // every acknowledged record's end
	if st, err := os.Stat(active); err == nil && st.Size() > written {
		m.stale++
	}
	switch r.IntN(6) {
	case 0:
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	case 1: // killed between writes
		abandon(t, l)
	case 2, 3: // killed while a record was written; maybe cut after it
		seg := l.Segment()
		abandon(t, l)
		frame := appendRecord(nil, recordSeed(formatVersion, seg), nil, m.payload())
		overwrite(t, active, written, frame[:r.IntN(len(frame))])
		if r.IntN(2) == 0 {
			st, err := os.Stat(active)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(active, written+r.Int64N(st.Size()-written+1)); err != nil {
				t.Fatal(err)
			}
		}
	case 4: // killed in a rotation, after the rename of a pooled file
		seg, pool := l.Segment(), l.pool
		abandon(t, l)
		if len(pool) == 0 {
			return
		}
		if err := os.Truncate(active, written); err != nil { // the cut came first
			t.Fatal(err)
		}
		p := pool[r.IntN(len(pool))]
		next := segmentPath(m.dir, seg+1)
		if err := os.Rename(filepath.Join(m.dir, poolName(p.num)), next); err != nil {
			t.Fatal(err)
		}
		if r.IntN(2) == 0 { // part of the new header reached the disk
			h := appendHeader(nil, seg+1, seg, written)
			overwrite(t, next, 0, h[:1+r.IntN(len(h)-1)])
		}
		m.recycled++
	case 5: // killed in a rotation, before the cut
		abandon(t, l)
	}
}

// overwrite writes b into the file at path at offset off.
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCrashBetweenReuseAndHeader: the process dies when a pooled file
// has its new name and its new header is being written (none of it, or
// part of it, lands), after a rotation from a segment that was itself a
// recycled file holding stale bytes after its records. Those were cut
// before the rename, so the log replays whole: the rotated segment's
// records, and nothing of either recycled file's earlier life.
func TestCrashBetweenReuseAndHeader(t *testing.T) {
	r := newRand(t)
	for range 20 {
		dir := t.TempDir()
		fsys := &stopFS{r: r}
		l, err := Open(Options{Dir: dir, FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		for seg := uint64(1); seg <= 2; seg++ { // two long segments, pooled
			appendAll(t, l, numbered(fmt.Sprintf("segment %d ", seg), 40, 100)...)
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
			if err := l.RemoveBefore(seg + 1); err != nil {
				t.Fatal(err)
			}
		}
		// Segment 3, segment 1's file, holds fewer records than that
		// file did; they are what the log must replay.
		want := numbered("segment 3 ", 3, 10)
		appendAll(t, l, want...)
		fsys.afterReuse = true
		if _, err := l.Rotate(); !errors.Is(err, errDied) {
			t.Fatalf("Rotate: %v, want the process to die", err)
		}
		l.Close()
		if st, err := os.Stat(segmentPath(dir, 4)); err != nil {
			t.Fatalf("no segment 4 (the reused file): %v", err)
		} else if st.Size() <= int64(headerLen) {
			t.Fatalf("segment 4 holds %d bytes: no stale records, the test tests nothing", st.Size())
		}
		if got := readLikeARecoveringServer(t, dir, 3); !equalPayloads(got, want) {
			t.Fatalf("a recovering reader got %s, want %s", describe(got), describe(want))
		}
		if got, last, err := replayAll(t, dir, 3); err != nil || last != 4 || !equalPayloads(got, want) {
			t.Fatalf("replay = %s, last %d, %v; want %s", describe(got), last, err, describe(want))
		}
	}
}
