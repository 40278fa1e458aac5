package sharedlog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// smallSegments makes logs of many segments out of few records.
const smallSegments = 4 << 10

// mustOpen opens a log, closed by t.Cleanup.
func mustOpen(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", opts.Name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// payload returns the i-th payload of k: unique per tablet, epoch and
// index, of varying length, and empty for i == 0 of epoch 0 keys.
func payload(k pinKey, i int) string {
	if k.epoch == 0 && i == 0 {
		return ""
	}
	return fmt.Sprintf("%s@%d#%d|%s", k.tablet, k.epoch, i, strings.Repeat("x", (i*37)%251))
}

// payloads returns payloads lo..hi-1 of k.
func payloads(k pinKey, lo, hi int) []string {
	var out []string
	for i := lo; i < hi; i++ {
		out = append(out, payload(k, i))
	}
	return out
}

// writeAll writes ps through h, waiting for each.
func writeAll(t testing.TB, h *Handle, ps []string) {
	t.Helper()
	if err := writeErr(h, ps); err != nil {
		t.Fatal(err)
	}
}

// writeErr is writeAll for goroutines other than the test's.
func writeErr(h *Handle, ps []string) error {
	for _, p := range ps {
		tk, err := h.Write([]byte(p))
		if err != nil {
			return fmt.Errorf("write %q for %v: %w", p, h.key, err)
		}
		if err := h.Wait(tk); err != nil {
			return fmt.Errorf("wait %q for %v: %w", p, h.key, err)
		}
	}
	return nil
}

// replayAll replays tablet at epoch from segment from of the log called
// name through l and returns copies of the payloads.
func replayAll(l *Log, name string, k pinKey, from uint64) ([]string, error) {
	got := []string{}
	err := l.Replay(name, k.tablet, k.epoch, from, func(p []byte) error {
		got = append(got, string(p))
		return nil
	})
	return got, err
}

// mustReplay is replayAll failing the test on an error.
func mustReplay(t testing.TB, l *Log, name string, k pinKey, from uint64) []string {
	t.Helper()
	got, err := replayAll(l, name, k, from)
	if err != nil {
		t.Fatalf("replay %v of log %s from %d by log %s: %v", k, name, from, l.Name(), err)
	}
	return got
}

// checkRecords fails unless got equals want.
func checkRecords(t testing.TB, what string, got, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if slices.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	at := func(s []string) string {
		if i < len(s) {
			return fmt.Sprintf("%q", s[i])
		}
		return "end"
	}
	t.Fatalf("%s: got %d records, want %d; first difference at %d: got %s, want %s",
		what, len(got), len(want), i, at(got), at(want))
}

// listSegments lists the segments of the log called name under root.
func listSegments(t testing.TB, root, name string) []uint64 {
	t.Helper()
	segs, err := wal.ListSegments(nil, Dir(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// segPath is the path of segment n of the log called name under root
// (wal names segments "%016d.log").
func segPath(root, name string, n uint64) string {
	return filepath.Join(Dir(root, name), fmt.Sprintf("%016d.log", n))
}

// segmentsOf reads the segment files of the log called name directly and
// returns, for each tablet and epoch, its payloads in file order and the
// segment each is in.
func segmentsOf(t testing.TB, root, name string) (recs map[pinKey][]string, segs map[pinKey][]uint64) {
	t.Helper()
	recs, segs = map[pinKey][]string{}, map[pinKey][]uint64{}
	dir := Dir(root, name)
	nums := listSegments(t, root, name)
	for i, n := range nums {
		var next *wal.Header // nil: the last segment
		if i < len(nums)-1 {
			h, err := wal.ReadHeader(nil, dir, nums[i+1])
			if err != nil {
				t.Fatal(err)
			}
			next = &h
		}
		_, err := wal.ReadSegment(nil, dir, n, 0, next, func(p []byte) error {
			tablet, epoch, rest, err := parseTag(p)
			if err != nil {
				return err
			}
			k := pinKey{string(tablet), epoch}
			recs[k] = append(recs[k], string(rest))
			segs[k] = append(segs[k], n)
			return nil
		})
		if err != nil {
			t.Fatalf("read segment %d of %s: %v", n, dir, err)
		}
	}
	return recs, segs
}

// fromSegment returns the records of ps (in segments segs) in segment from
// or later.
func fromSegment(ps []string, segs []uint64, from uint64) []string {
	out := []string{}
	for i, p := range ps {
		if segs[i] >= from {
			out = append(out, p)
		}
	}
	return out
}

// fileSize returns the size of the file at path.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// countingFS counts, per path, the files opened and the bytes read.
type countingFS struct {
	vfs.FS
	mu      sync.Mutex
	opens   map[string]int
	read    map[string]int64
	headers map[string]int // opens that read only the header
}

func newCountingFS() *countingFS {
	return &countingFS{FS: vfs.Default, opens: map[string]int{}, read: map[string]int64{}, headers: map[string]int{}}
}

func (c *countingFS) Open(name string) (vfs.Readable, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{Readable: f, c: c, name: name}, nil
}

// counts returns the opens and bytes read of path so far.
func (c *countingFS) counts(path string) (opens int, read int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[path], c.read[path]
}

func (c *countingFS) add(name string, n int) {
	c.mu.Lock()
	c.read[name] += int64(n)
	c.mu.Unlock()
}

type countingFile struct {
	vfs.Readable
	c    *countingFS
	name string
	read int64 // bytes read through this handle
	past bool  // read more than the header
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.Readable.Read(p)
	f.c.add(f.name, n)
	f.past = true
	return n, err
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.Readable.ReadAt(p, off)
	f.c.add(f.name, n)
	f.read += int64(n)
	f.past = f.past || off > 0 || len(p) > segmentHeaderLen
	return n, err
}

// segmentHeaderLen is the length of a segment header (wal format
// version 3).
const segmentHeaderLen = 36

// Close counts an open that read only a segment's header (a replay
// checking the size the next segment records for the one it read) apart:
// opens and bytes read count the reads of records.
func (f *countingFile) Close() error {
	if !f.past && f.read > 0 {
		f.c.mu.Lock()
		f.c.opens[f.name]--
		f.c.read[f.name] -= f.read
		f.c.headers[f.name]++
		f.c.mu.Unlock()
	}
	return f.Readable.Close()
}
