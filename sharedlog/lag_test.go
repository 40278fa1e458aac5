package sharedlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// laggingFS shows one file shorter than it is, as an object store whose
// listing has not caught up with its last parts does: the first opens
// of path see only its first visible bytes.
type laggingFS struct {
	vfs.FS
	path    string
	visible int64

	mu   sync.Mutex
	lags int // opens of path still to see it short
}

func (l *laggingFS) Open(name string) (vfs.Readable, error) {
	f, err := l.FS.Open(name)
	if err != nil || name != l.path {
		return f, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lags == 0 {
		return f, nil
	}
	l.lags--
	return &shortFile{Readable: f, size: l.visible}, nil
}

// shortFile is a file cut at size.
type shortFile struct {
	vfs.Readable
	size int64
}

func (s *shortFile) Size() int64 { return s.size }

func (s *shortFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	short := int64(len(p)) > s.size-off
	if short {
		p = p[:s.size-off]
	}
	n, err := s.Readable.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

func (s *shortFile) Read(p []byte) (int, error) { panic("shortFile.Read: not used by replay") }

// TestListingThatLagsOnASegment: a store listing that shows segment n+1
// but still lags on the last records of segment n (an object store that
// does not list n's last parts yet) never makes a replay stop early or
// skip records: a lag that has passed by the time the segment is read
// again costs nothing, and one that has not is an error wrapping
// wal.ErrCorrupt naming the log and segment, for the log's own
// replay and for another server's.
func TestListingThatLagsOnASegment(t *testing.T) {
	for _, tc := range []struct {
		name string
		lags int // opens of the segment that see it short
		fail bool
	}{
		// One open reads the segment's header (checking the segment
		// before it), the next its records.
		{"the listing catches up", 2, false},
		{"the listing stays behind", 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			k, other := pinKey{"t", 1}, pinKey{"other", 1}
			lfs := &laggingFS{FS: vfs.Default}
			w := mustOpen(t, Options{FS: lfs, Root: root, Name: "w", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
			hk, ho := w.Attach(k.tablet, k.epoch), w.Attach(other.tablet, other.epoch)
			for i := range 60 {
				writeAll(t, hk, payloads(k, i, i+1))
				writeAll(t, ho, payloads(other, i, i+1))
			}
			segs := listSegments(t, root, "w")
			if len(segs) < 4 {
				t.Fatalf("%d segments, the test needs several", len(segs))
			}
			// Segment 2 shows without its last two records, as if
			// their parts were not listed yet.
			path := segPath(root, "w", segs[1])
			ends := recordEnds(t, path)
			lag := func() {
				lfs.mu.Lock()
				defer lfs.mu.Unlock()
				lfs.path, lfs.visible, lfs.lags = path, ends[len(ends)-3], tc.lags
			}
			lag()
			got, err := replayAll(w, "w", k, 0)
			check(t, "the log's own replay", got, err, tc.fail, payloads(k, 0, 60), segs[1])

			r := mustOpen(t, Options{FS: lfs, Root: root, Name: "r"})
			lag()
			got, err = replayAll(r, "w", k, 0)
			check(t, "another server's replay", got, err, tc.fail, payloads(k, 0, 60), segs[1])
			// The next replay of the log by the same server (from its
			// cache, or, after a failure, afresh) is as right.
			lag()
			got, err = replayAll(r, "w", other, 0)
			check(t, "another server's replay of another tablet", got, err, tc.fail, payloads(other, 0, 60), segs[1])
		})
	}
}

func check(t *testing.T, what string, got []string, err error, fail bool, want []string, seg uint64) {
	t.Helper()
	if !fail {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		checkRecords(t, what, got, want)
		return
	}
	if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%016d.log", seg)) {
		t.Fatalf("%s: %d of %d records, err = %v; want ErrCorrupt naming segment %d", what, len(got), len(want), err, seg)
	}
}

// recordEnds returns the offsets where the records of the segment at path
// end.
func recordEnds(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := segmentHeaderLen
	if b[7] == 1 {
		off = 8 // format version 1
	}
	var ends []int64
	for off < len(b) {
		off += 8 + int(binary.LittleEndian.Uint32(b[off+4:]))
		ends = append(ends, int64(off))
	}
	return ends
}

// damagedFS fails every open of one file with a corruption, as s3fs does
// for an object whose middle part is missing (s3fs.ErrMissingPart).
type damagedFS struct {
	vfs.FS
	path string
}

func (d *damagedFS) Open(name string) (vfs.Readable, error) {
	if name == d.path {
		return nil, fmt.Errorf("%w: object %s: part 1 is missing", corruption.ErrCorrupt, name)
	}
	return d.FS.Open(name)
}

// TestDamagedSegmentFailsOnlyTheReplaysThatNeedIt: a segment of another
// server's log that cannot be read (a part missing) fails, with an error
// wrapping wal.ErrCorrupt naming it, the replays of tablets whose
// replay point is at or below it, and not those of tablets that start
// after it (the segment was being deleted when its server died).
func TestDamagedSegmentFailsOnlyTheReplaysThatNeedIt(t *testing.T) {
	root := t.TempDir()
	k := pinKey{"t", 1}
	w := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
	writeAll(t, w.Attach(k.tablet, k.epoch), payloads(k, 0, 60))
	segs := listSegments(t, root, "w")
	if len(segs) < 5 {
		t.Fatalf("segments %v, the test needs 5 at least", segs)
	}
	recs, segOf := segmentsOf(t, root, "w")
	damaged := segPath(root, "w", segs[1])
	for _, from := range []uint64{segs[2], segs[1], 0, segs[3]} {
		r := mustOpen(t, Options{FS: &damagedFS{FS: vfs.Default, path: damaged}, Root: root, Name: fmt.Sprintf("r%d", from)})
		got, err := replayAll(r, "w", k, from)
		if from != 0 && from > segs[1] {
			if err != nil {
				t.Fatalf("replay from segment %d, above the damaged %d: %v", from, segs[1], err)
			}
			checkRecords(t, fmt.Sprintf("replay from segment %d", from), got, fromSegment(recs[k], segOf[k], from))
			continue
		}
		if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(damaged)) {
			t.Fatalf("replay from segment %d, at or below the damaged %d: err = %v; want ErrCorrupt naming it", from, segs[1], err)
		}
	}
}
