package sharedlog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/wal"
)

// TestOpenRefusesBadNames: a log name must be one plain path element; Open
// refuses others with cell.ErrInvalid and creates nothing.
func TestOpenRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "/abs", "../x", "a/", "./a"} {
		root := t.TempDir()
		l, err := Open(Options{Root: root, Name: name})
		if err == nil {
			l.Close()
			t.Fatalf("Open(name %q) succeeded", name)
		}
		if !errors.Is(err, cell.ErrInvalid) {
			t.Fatalf("Open(name %q): err = %v, want cell.ErrInvalid", name, err)
		}
		if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
			t.Fatalf("Open(name %q) left %d entries under the root (%v)", name, len(entries), err)
		}
	}
}

// TestOpenRefusesExistingLog: a log is only ever appended by the process
// that created it, so Open refuses a name whose folder holds segments,
// while the log is open and after it closed. An empty folder is fine.
func TestOpenRefusesExistingLog(t *testing.T) {
	root := t.TempDir()
	l := mustOpen(t, Options{Root: root, Name: "srv", SyncMode: wal.SyncNone})
	k := pinKey{"t", 1}
	h := l.Attach(k.tablet, k.epoch)
	writeAll(t, h, payloads(k, 0, 3))
	if l2, err := Open(Options{Root: root, Name: "srv"}); err == nil {
		l2.Close()
		t.Fatal("a second Open of an open log succeeded")
	}
	// The first log is unharmed.
	writeAll(t, h, payloads(k, 3, 5))
	checkRecords(t, "replay after the refused Open", mustReplay(t, l, "srv", k, 0), payloads(k, 0, 5))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l2, err := Open(Options{Root: root, Name: "srv"}); err == nil {
		l2.Close()
		t.Fatal("Open of a closed log's name succeeded")
	}

	if err := os.MkdirAll(Dir(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := mustOpen(t, Options{Root: root, Name: "empty"})
	if got, want := e.Name(), "empty"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
	if segs := listSegments(t, root, "empty"); !slices.Equal(segs, []uint64{1}) {
		t.Fatalf("a new log has segments %v, want [1]", segs)
	}
	if want := filepath.Join(root, "logs", "empty"); Dir(root, "empty") != want {
		t.Fatalf("Dir = %s, want %s", Dir(root, "empty"), want)
	}
}

// TestClosed: after Close, writes fail with wal.ErrClosed; moving or
// dropping a pin is harmless.
func TestClosed(t *testing.T) {
	l, err := Open(Options{Root: t.TempDir(), Name: "w"})
	if err != nil {
		t.Fatal(err)
	}
	h := l.Attach("t", 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := h.Write([]byte("x")); !errors.Is(err, wal.ErrClosed) {
		t.Fatalf("Write after Close: err = %v, want ErrClosed", err)
	}
	if err := h.RemoveBefore(1); err != nil {
		t.Fatalf("RemoveBefore after Close: %v", err)
	}
	if err := h.Detach(true); err != nil {
		t.Fatalf("Detach after Close: %v", err)
	}
}

// trimmer writes records of several tablets into one log and checks which
// segments are left.
type trimmer struct {
	t    *testing.T
	root string
	l    *Log
	next map[pinKey]int
}

// grow writes records of the handles (in turn) until the log has moved on
// by segs segments.
func (tr *trimmer) grow(segs uint64, hs ...*Handle) {
	tr.t.Helper()
	start := tr.l.cl.Segment()
	for tr.l.cl.Segment() < start+segs {
		for _, h := range hs {
			i := tr.next[h.key]
			tr.next[h.key]++
			writeAll(tr.t, h, payloads(h.key, i, i+1))
		}
	}
}

// active returns the active segment.
func (tr *trimmer) active() uint64 { return tr.l.cl.Segment() }

// expectFirst checks that the oldest segment left is first, that none is
// missing after it, and that Size counts the bytes of the segments left
// (the ends of their records: a recycled file may hold stale bytes after
// them).
func (tr *trimmer) expectFirst(what string, first uint64) {
	tr.t.Helper()
	segs := listSegments(tr.t, tr.root, tr.l.Name())
	if len(segs) == 0 || segs[0] != first {
		tr.t.Fatalf("%s: segments %v left, want them to start at %d", what, segs, first)
	}
	var disk int64
	for i, s := range segs {
		if s != first+uint64(i) {
			tr.t.Fatalf("%s: segments %v left, with a gap", what, segs)
		}
		disk += segmentEnd(tr.t, tr.root, tr.l.Name(), segs, i)
	}
	if size := tr.l.Size(); size != disk {
		tr.t.Fatalf("%s: Size() = %d, the %d segment files hold %d bytes", what, size, len(segs), disk)
	}
}

// TestTrimming: the log deletes the segments below the lowest pin of all
// attached tablets; a dirty Detach keeps the tablet's pin, a clean one
// drops it, and a tablet's newer epoch moving its pin drops the pins of its
// older epochs.
func TestTrimming(t *testing.T) {
	root := t.TempDir()
	l := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
	tr := &trimmer{t: t, root: root, l: l, next: map[pinKey]int{}}
	a, b := l.Attach("a", 1), l.Attach("b", 1)
	tr.grow(6, a, b)
	tr.expectFirst("nothing flushed", 1)

	if err := a.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("a flushed, b pins segment 1", 1)
	if err := b.RemoveBefore(3); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("b needs segment 3 on", 3)

	// What b still needs replays from another server, from its pin.
	bKey := pinKey{"b", 1}
	recs, segOf := segmentsOf(t, root, "w")
	r := mustOpen(t, Options{Root: root, Name: "r"})
	checkRecords(t, "foreign replay of b from its pin", mustReplay(t, r, "w", bKey, 3),
		fromSegment(recs[bKey], segOf[bKey], 3))

	// b leaves with records unflushed: its pin stays.
	if err := b.Detach(false); err != nil {
		t.Fatal(err)
	}
	tr.grow(2, a)
	if err := a.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	aPin := tr.active()
	tr.expectFirst("b detached dirty", 3)

	// b comes back at a newer epoch and flushes: its old epoch's pin goes.
	b2 := l.Attach("b", 2)
	tr.grow(1, a, b2)
	tr.expectFirst("b attached at epoch 2", 3)
	if err := b2.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("b at epoch 2 flushed", aPin)

	// c attaches at the active segment and leaves clean: its pin goes.
	c := l.Attach("c", 1)
	cPin := tr.active()
	tr.grow(2, a, b2, c)
	if err := a.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	if err := b2.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("a and b flushed, c attached", cPin)
	if err := c.Detach(true); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("c detached clean", tr.active())

	// Attaching again at the same epoch keeps the older, lower pin.
	d := l.Attach("d", 1)
	dPin := tr.active()
	tr.grow(2, d)
	d2 := l.Attach("d", 1)
	for _, h := range []*Handle{a, b2} {
		if err := h.RemoveBefore(tr.active()); err != nil {
			t.Fatal(err)
		}
	}
	tr.expectFirst("d attached twice at epoch 1", dPin)
	if err := d2.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("d flushed", tr.active())

	// An older epoch attaching after a newer one does not drop the newer
	// one's pin, and its own is dropped once the newer one moves.
	e2 := l.Attach("e", 2)
	e2Pin := tr.active()
	tr.grow(2, e2)
	e1 := l.Attach("e", 1)
	tr.grow(1, e1)
	if err := e1.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Handle{a, b2, d2} {
		if err := h.RemoveBefore(tr.active()); err != nil {
			t.Fatal(err)
		}
	}
	tr.expectFirst("e at epoch 1 flushed, e at epoch 2 not", e2Pin)
	if err := e2.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("e at epoch 2 flushed", tr.active())
}

// TestPressure: when the log grows past MaxBytes, OnPressure names the
// tablets pinning its oldest segment, once per oldest segment; flushing
// them shrinks the log.
func TestPressure(t *testing.T) {
	called := make(chan []string, 16)
	root := t.TempDir()
	const maxBytes = 16 << 10
	l := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 4 << 10, MaxBytes: maxBytes,
		SyncMode: wal.SyncNone, OnPressure: func(tablets []string) {
			select {
			case called <- tablets:
			default:
			}
		}})
	await := func(want ...string) {
		t.Helper()
		select {
		case got := <-called:
			if !slices.Equal(got, want) {
				t.Fatalf("OnPressure(%q), want OnPressure(%q)", got, want)
			}
		case <-time.After(10 * time.Second): // a deadlock guard, not a timing assertion
			t.Fatalf("OnPressure was not called with %q", want)
		}
	}
	idle, busy := l.Attach("idle", 1), l.Attach("busy", 1)
	writeAll(t, idle, []string{"idle's only record"})
	k := pinKey{"busy", 1}
	n := 0
	busyWrites := func() {
		t.Helper()
		for range 2 * pressureEvery {
			writeAll(t, busy, []string{payload(k, n) + strings.Repeat("y", 150)})
			n++
			if err := busy.RemoveBefore(l.cl.Segment()); err != nil {
				t.Fatal(err)
			}
		}
	}
	busyWrites()
	await("idle")
	if l.Size() <= maxBytes {
		t.Fatalf("Size() = %d after OnPressure, want more than %d", l.Size(), maxBytes)
	}

	// idle does not flush (a tablet closed unflushed cannot): as the log
	// keeps growing, it is named again.
	for len(called) == 0 && l.Size() < 4*maxBytes {
		busyWrites()
	}
	await("idle")

	// Another tablet now holds the oldest segment: it is named next.
	idle2 := l.Attach("idle2", 1)
	writeAll(t, idle2, []string{"idle2's only record"})
	if err := idle.Detach(true); err != nil {
		t.Fatal(err)
	}
	for len(called) > 0 {
		<-called
	}
	busyWrites()
	await("idle2")

	// idle2 flushes: only the active segment is left.
	if err := idle2.RemoveBefore(l.cl.Segment()); err != nil {
		t.Fatal(err)
	}
	if segs := listSegments(t, root, "w"); len(segs) != 1 || l.Size() > maxBytes {
		t.Fatalf("after the flush: segments %v, Size() = %d", segs, l.Size())
	}
}

// TestRotateIsActiveSegment: Rotate does not rotate the shared log; it
// names the segment the next record lands in or after.
func TestRotateIsActiveSegment(t *testing.T) {
	root := t.TempDir()
	l := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
	k := pinKey{"t", 1}
	h := l.Attach(k.tablet, k.epoch)
	var want []uint64
	for i := range 50 {
		s1, err := h.Rotate()
		if err != nil {
			t.Fatal(err)
		}
		s2, _ := h.Rotate()
		if s1 != s2 {
			t.Fatalf("two Rotate calls in a row: %d, then %d", s1, s2)
		}
		want = append(want, s1)
		writeAll(t, h, payloads(k, i, i+1))
	}
	_, segOf := segmentsOf(t, root, "w")
	if !slices.Equal(segOf[k], want) {
		t.Fatalf("records in segments %v, want the segment Rotate returned before each: %v", segOf[k], want)
	}
	if want[0] != 1 || want[len(want)-1] < 5 {
		t.Fatalf("records spread over segments %v only, the test needs several", want)
	}
}

// TestRelease: a tablet closed unflushed keeps its pins until Release says
// an owner at a newer epoch superseded them (or the tablet is gone); pins
// of later epochs stay.
func TestRelease(t *testing.T) {
	root := t.TempDir()
	l := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
	tr := &trimmer{t: t, root: root, l: l, next: map[pinKey]int{}}
	old, other := l.Attach("t", 1), l.Attach("u", 1)
	tr.grow(2, old, other)
	if err := old.Detach(false); err != nil { // failed or fenced: unflushed
		t.Fatal(err)
	}
	cur := l.Attach("t", 3) // reloaded here at a later epoch, not yet flushed
	tr.grow(3, cur, other)
	if err := other.RemoveBefore(tr.active()); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("t's epoch 1 pins the log", 1)

	if err := l.Release("t", 1); err != nil {
		t.Fatal(err)
	}
	// t at epoch 3 attached at segment 3 or later and still pins it.
	segs := listSegments(t, root, "w")
	if segs[0] < 2 || segs[0] > 4 {
		t.Fatalf("after releasing t's epoch 1: segments %v; want them to start at t's epoch 3 pin", segs)
	}
	if err := l.Release("t", 2); err != nil {
		t.Fatal(err)
	}
	if got := listSegments(t, root, "w"); !slices.Equal(got, segs) {
		t.Fatalf("Release of epochs up to 2 changed the segments from %v to %v: epoch 3's pin must stay", segs, got)
	}
	if err := l.Release("t", 3); err != nil {
		t.Fatal(err)
	}
	tr.expectFirst("every pin of t released", tr.active())
}

// segmentEnd returns where the records of segment segs[i] of the log
// called name end, as a reader finds it.
func segmentEnd(t *testing.T, root, name string, segs []uint64, i int) int64 {
	t.Helper()
	dir := Dir(root, name)
	var next *wal.Header
	if i < len(segs)-1 {
		h, err := wal.ReadHeader(nil, dir, segs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		next = &h
	}
	end, err := wal.ReadSegment(nil, dir, segs[i], 0, next, func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return end
}
