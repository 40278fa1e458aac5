package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// abandon drops l as a killed process would: the active segment's file is
// closed without Close's last round or its cut of stale bytes, and the
// pooled files stay.
func abandon(t *testing.T, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy || len(l.buf) > 0 {
		t.Fatal("abandon: a round runs or records are buffered")
	}
	l.closed = true
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
	close(l.stop)
}

// appendAll appends each payload and fails the test on an error.
func appendAll(t *testing.T, l *Log, payloads ...[]byte) {
	t.Helper()
	for _, p := range payloads {
		if err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
}

// numbered returns n payloads "<prefix><i>" padded to size bytes.
func numbered(prefix string, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		p := fmt.Appendf(nil, "%s%d", prefix, i)
		out[i] = append(p, bytes.Repeat([]byte{'.'}, max(0, size-len(p)))...)
	}
	return out
}

// TestRemovedSegmentIsRecycled: RemoveBefore keeps the removed segment's
// file aside under a name that is no segment's, and the next rotation
// overwrites that same file as the new segment; replay returns what the
// new segment holds and nothing of its earlier life.
func TestRemovedSegmentIsRecycled(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	appendAll(t, l, numbered("first life ", 50, 100)...)
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(segmentPath(dir, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	pooledPath := filepath.Join(dir, poolName(1))
	st, err := os.Stat(pooledPath)
	if err != nil || !os.SameFile(st, old) {
		t.Fatalf("segment 1 not kept as %s: %v", poolName(1), err)
	}
	if nums, err := ListSegments(nil, dir); err != nil || !slices.Equal(nums, []uint64{2}) {
		t.Fatalf("segments %v, %v; want [2] (a pooled file is no segment)", nums, err)
	}
	if got, want := l.Size(), diskSize(t, dir); got != want {
		t.Fatalf("Size = %d, the segments hold %d (a pooled file is not counted)", got, want)
	}
	appendAll(t, l, []byte("in segment 2"))
	if seg, err := l.Rotate(); err != nil || seg != 3 {
		t.Fatalf("Rotate = %d, %v", seg, err)
	}
	st, err = os.Stat(segmentPath(dir, 3))
	if err != nil || !os.SameFile(st, old) {
		t.Fatalf("segment 3 is not segment 1's file: %v", err)
	}
	if _, err := os.Stat(pooledPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the pooled file is still there: %v", err)
	}
	appendAll(t, l, []byte("short"))
	// A reader of the log as it is now (its writer alive) sees segment
	// 3's one record; the stale records after it are not segment 3's.
	want := [][]byte{[]byte("in segment 2"), []byte("short")}
	if got := readLikeARecoveringServer(t, dir, 2); !equalPayloads(got, want) {
		t.Fatalf("a reader of the live log got %q, want %q", got, want)
	}
	abandon(t, l)
	if st, _ := os.Stat(segmentPath(dir, 3)); st.Size() <= int64(headerLen+frameHeaderLen+len("short")) {
		t.Fatalf("segment 3 holds %d bytes: no stale bytes, the test tests nothing", st.Size())
	}
	got, last, err := replayAll(t, dir, 2)
	if err != nil || last != 3 || !equalPayloads(got, want) {
		t.Fatalf("replay = %q, last %d, %v; want %q", got, last, err, want)
	}
}

// readLikeARecoveringServer reads the log in dir from segment from as
// package sharedlog reads another server's log: never changing it, each
// segment but the last up to the size the next one records.
func readLikeARecoveringServer(t *testing.T, dir string, from uint64) [][]byte {
	t.Helper()
	nums, err := ListSegments(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for i, n := range nums {
		if n < from {
			continue
		}
		var next *Header
		if i < len(nums)-1 {
			h, err := ReadHeader(nil, dir, nums[i+1])
			if err != nil {
				t.Fatal(err)
			}
			next = &h
		}
		end, err := ReadSegment(nil, dir, n, 0, next, func(p []byte) error {
			got = append(got, slices.Clone(p))
			return nil
		})
		if err != nil {
			t.Fatalf("segment %d: %v", n, err)
		}
		if next != nil {
			if err := CheckEnd(dir, n, end, *next); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// TestCloseCutsStaleBytes: a Log closed on a recycled segment cuts the
// stale bytes after its records, so the segment the next Log starts
// (which records nothing of its predecessor) follows a clean one.
func TestCloseCutsStaleBytes(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	appendAll(t, l, numbered("old ", 40, 100)...)
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rotate(); err != nil { // 3 reuses 1's file
		t.Fatal(err)
	}
	appendAll(t, l, []byte("x"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(segmentPath(dir, 3)); err != nil || st.Size() != int64(headerLen+frameHeaderLen+1) {
		t.Fatalf("segment 3 after Close: %v, %v; want %d bytes", st.Size(), err, headerLen+frameHeaderLen+1)
	}
	if _, err := os.Stat(filepath.Join(dir, poolName(2))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Close left a pooled file: %v", err)
	}
	l = mustOpen(t, Options{Dir: dir})
	appendAll(t, l, []byte("y"))
	l.Close()
	got, _, err := replayAll(t, dir, 3)
	if err != nil || !equalPayloads(got, [][]byte{[]byte("x"), []byte("y")}) {
		t.Fatalf("replay = %q, %v", got, err)
	}
}

// TestCrashWhileRecycling: a crash after the rename of a pooled file to
// the new segment's name and before its new header reached the disk
// leaves the last segment with the header of its earlier life (or a torn
// mix of both) and that life's records. Replay reads it as a torn
// segment that holds nothing (and cuts it), a recovering reader as
// empty; neither returns its stale records. A valid record of the
// segment itself after such a header is damage, not a torn tail.
func TestCrashWhileRecycling(t *testing.T) {
	stale := func() []byte {
		b, _ := writeSegment(1, numbered("stale ", 20, 50))
		return b
	}
	second, _ := writeSegment(2, [][]byte{[]byte("in 2")})
	for name, tc := range map[string]struct {
		seg3    func() []byte
		corrupt bool
	}{
		"old header": {seg3: stale},
		"torn header": {seg3: func() []byte {
			b := stale()
			copy(b, appendHeader(nil, 3, 0, 0)[:20]) // the first 20 bytes of the new header
			return b
		}},
		"new header, stale records": {seg3: func() []byte {
			b := stale()
			copy(b, appendHeader(nil, 3, 0, 0))
			return b
		}},
		"damaged header before a record of its own": {seg3: func() []byte {
			b, _ := writeSegment(3, [][]byte{[]byte("acknowledged")})
			b[headerLenV1+2] ^= 1
			return b
		}, corrupt: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, segmentPath(dir, 2), second)
			writeFile(t, segmentPath(dir, 3), tc.seg3())
			if tc.corrupt {
				if _, _, err := replayAll(t, dir, 2); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("replay: %v, want ErrCorrupt", err)
				}
				return
			}
			if got := readLikeARecoveringServer(t, dir, 2); !equalPayloads(got, [][]byte{[]byte("in 2")}) {
				t.Fatalf("recovering reader got %q", got)
			}
			got, last, err := replayAll(t, dir, 2)
			if err != nil || last != 3 || !equalPayloads(got, [][]byte{[]byte("in 2")}) {
				t.Fatalf("replay = %q, last %d, %v", got, last, err)
			}
			if st, err := os.Stat(segmentPath(dir, 3)); err != nil || st.Size() != 0 && st.Size() != int64(headerLen) {
				t.Fatalf("segment 3 left at %d bytes, %v; want it cut before any stale record", st.Size(), err)
			}
			// The next Log goes on after it.
			l := mustOpen(t, Options{Dir: dir})
			appendAll(t, l, []byte("after"))
			l.Close()
			if got, _, err := replayAll(t, dir, 2); err != nil || !equalPayloads(got, [][]byte{[]byte("in 2"), []byte("after")}) {
				t.Fatalf("replay after reopening = %q, %v", got, err)
			}
		})
	}
}

// TestStaleHeaderBeforeTheLastSegmentIsCorrupt: only the last segment
// may be a recycled file whose creation a crash cut short; a later
// segment proves this one was made whole.
func TestStaleHeaderBeforeTheLastSegmentIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	stale, _ := writeSegment(1, numbered("stale ", 5, 20))
	writeFile(t, segmentPath(dir, 2), stale)
	next, _ := writeSegment(3, [][]byte{[]byte("x")})
	writeFile(t, segmentPath(dir, 3), next)
	if _, _, err := replayAll(t, dir, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replay: %v, want ErrCorrupt", err)
	}
}

// TestLeftoverPoolFilesAreRemovedOnOpen: pooled files a crashed Log left
// are not segments, and Open deletes them.
func TestLeftoverPoolFilesAreRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	appendAll(t, l, []byte("a"))
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	abandon(t, l)
	if _, err := os.Stat(filepath.Join(dir, poolName(1))); err != nil {
		t.Fatalf("no pooled file to leave behind: %v", err)
	}
	if got, last, err := replayAll(t, dir, 0); err != nil || last != 2 || len(got) != 0 {
		t.Fatalf("replay = %q, %d, %v", got, last, err)
	}
	l = mustOpen(t, Options{Dir: dir})
	if _, err := os.Stat(filepath.Join(dir, poolName(1))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open left the pooled file: %v", err)
	}
	if l.Segment() != 3 {
		t.Fatalf("Open started segment %d, want 3", l.Segment())
	}
}

// TestRecyclingOptions: a negative RecycleSegments, or an FS that cannot
// overwrite files, deletes removed segments; the pool never holds more
// than RecycleSegments files.
func TestRecyclingOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keep   int
		fs     vfs.FS
		pooled int
	}{
		{"default", 0, nil, defaultRecycle},
		{"one", 1, nil, 1},
		{"disabled", -1, nil, 0},
		{"no Reuser", 0, plainFS{vfs.Default}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, Options{Dir: dir, FS: tc.fs, RecycleSegments: tc.keep})
			for range 5 {
				appendAll(t, l, []byte("r"))
				if _, err := l.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.RemoveBefore(l.Segment()); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range ents {
				if _, ok := parsePoolName(e.Name()); ok {
					n++
				}
			}
			if n != tc.pooled {
				t.Fatalf("%d pooled files, want %d", n, tc.pooled)
			}
		})
	}
}

// plainFS hides the Reuse of the FS it wraps.
type plainFS struct{ vfs.FS }

// TestFailedReuseCreatesTheSegment: a pooled file that cannot be reused
// (here: it vanished) is given up, and the segment is created afresh.
func TestFailedReuseCreatesTheSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	appendAll(t, l, []byte("a"))
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, poolName(1))); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, []byte("b"))
	if _, err := l.Rotate(); err != nil {
		t.Fatalf("Rotate with a vanished pooled file: %v", err)
	}
	appendAll(t, l, []byte("c"))
	l.Close()
	if got, _, err := replayAll(t, dir, 2); err != nil || !equalPayloads(got, [][]byte{[]byte("b"), []byte("c")}) {
		t.Fatalf("replay = %q, %v", got, err)
	}
}

// TestReuseNeverReplacesASegment: the rename of a pooled file never
// replaces an existing segment (another writer's): the rotation fails
// as a Create of an existing name does, and the other file is untouched.
func TestReuseNeverReplacesASegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	appendAll(t, l, []byte("a"))
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	theirs, _ := writeSegment(3, [][]byte{[]byte("another writer's")})
	writeFile(t, segmentPath(dir, 3), theirs)
	if _, err := l.Rotate(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Rotate onto an existing segment: %v, want fs.ErrExist", err)
	}
	if b, err := os.ReadFile(segmentPath(dir, 3)); err != nil || !bytes.Equal(b, theirs) {
		t.Fatalf("segment 3 changed: %v", err)
	}
}

// TestLongStaleTailIsATornTail: the last segment, a recycled file, holds a
// few records of its own and then 16 MiB of its earlier life: records of
// another segment, bytes a client wrote that read as record lengths at
// every other offset, or random bytes. Each is a torn tail, replayed and
// cut (a search for a record starting at any byte of them, of any
// length, would exceed any budget and refuse to open the log).
func TestLongStaleTailIsATornTail(t *testing.T) {
	r := newRand(t)
	stale := map[string]func(n int) []byte{
		"old records": func(n int) []byte {
			var b []byte
			for len(b) < n {
				p := make([]byte, 50+r.IntN(200))
				for i := range p[:len(p)/2] {
					p[i] = byte(r.Uint32())
				}
				b = appendRecord(b, recordSeed(formatVersion, 3), nil, p)
			}
			return b
		},
		"lengths everywhere": func(n int) []byte {
			return bytes.Repeat([]byte{0, 0, 8, 0}, n/4) // 512 KiB at every fourth offset
		},
		"random": func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		},
	}
	for name, gen := range stale {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			want := numbered("new ", 3, 20)
			seg, ends := writeSegment(5, want)
			file := append(seg, gen(16<<20)...)
			writeFile(t, segmentPath(dir, 5), file)
			got, _, err := replayAll(t, dir, 0)
			if err != nil || !equalPayloads(got, want) {
				t.Fatalf("replay = %s, %v; want %s", describe(got), err, describe(want))
			}
			if st, err := os.Stat(segmentPath(dir, 5)); err != nil || st.Size() != int64(ends[len(ends)-1]) {
				t.Fatalf("segment left at %d bytes, %v; want %d", st.Size(), err, ends[len(ends)-1])
			}
		})
	}
}

// TestDamageBeforeALongRecordIsCorrupt: in the last segment of format
// version 3, a damaged record whose length is intact, followed by a valid
// record further away than the window searched after damage, is still
// damage: the next record is looked for where the length says.
func TestDamageBeforeALongRecordIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	long := bytes.Repeat([]byte("long record "), (tornWindow+100)/12)
	seg, ends := writeSegment(1, [][]byte{[]byte("first"), long, []byte("after")})
	seg[ends[0]+frameHeaderLen+100] ^= 1 // inside the long record's payload
	writeFile(t, segmentPath(dir, 1), seg)
	got, _, err := replayAll(t, dir, 0)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", ends[1])) {
		t.Fatalf("replay = %s, %v; want ErrCorrupt naming the valid record at offset %d", describe(got), err, ends[1])
	}
}

// TestReadingASegmentBeingOverwritten: a reader of a log whose writer is
// overwriting a recycled file (a server replaying from its own log) may
// read a record, or the header, while the writer's write has reached
// only part of it: it reads as stale bytes, and by the time the bytes
// after it are read the writer's next records are there. The reader
// reads the bad record again before it calls it damage, and gets every
// record.
func TestReadingASegmentBeingOverwritten(t *testing.T) {
	want := numbered("new ", 6, 30)
	seg, ends := writeSegment(2, want)
	old, _ := writeSegment(1, numbered("old ", 20, 40))
	file := append(bytes.Clone(seg), old[len(seg):]...)
	for name, at := range map[string]int64{"a record": int64(ends[2] + 5), "the header": 0} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, segmentPath(dir, 2), file)
			fsys := &overwrittenFS{FS: vfs.Default, path: segmentPath(dir, 2), old: old, at: at}
			var got [][]byte
			end, err := ReadSegment(fsys, dir, 2, 0, nil, func(p []byte) error {
				got = append(got, slices.Clone(p))
				return nil
			})
			if err != nil || !equalPayloads(got, want) || end != int64(ends[len(ends)-1]) {
				t.Fatalf("read %s up to %d, %v; want %s up to %d", describe(got), end, err, describe(want), ends[len(ends)-1])
			}
			if !fsys.seen {
				t.Fatal("the reader never read the bytes being overwritten: the test tests nothing")
			}
		})
	}
}

// overwrittenFS shows the file at path as its writer is overwriting it:
// the first read that covers offset at sees the old bytes from at on
// (the write has not reached them yet), later reads the new ones.
type overwrittenFS struct {
	vfs.FS
	path string
	old  []byte
	at   int64
	seen bool
}

func (o *overwrittenFS) Open(name string) (vfs.Readable, error) {
	f, err := o.FS.Open(name)
	if err != nil || name != o.path {
		return f, err
	}
	return &overwrittenFile{Readable: f, o: o}, nil
}

type overwrittenFile struct {
	vfs.Readable
	o *overwrittenFS
}

func (f *overwrittenFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.Readable.ReadAt(p, off)
	if o := f.o; !o.seen && off <= o.at && o.at < off+int64(n) {
		o.seen = true
		copy(p[o.at-off:n], o.old[o.at:])
	}
	return n, err
}

func (f *overwrittenFile) Read(p []byte) (int, error) {
	panic("overwrittenFile.Read: not used by readers")
}
