package sharedlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/wal"
)

// TestRoundTrip writes the records of several tablets at several epochs,
// first interleaved from one goroutine and then concurrently, and replays
// every tablet and epoch from every segment, from the log itself (while it
// is open and after it closed) and from another server's log: each replay
// returns exactly that tablet's records of that epoch in that segment or
// later, in write order.
func TestRoundTrip(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "writer", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
	keys := []pinKey{
		{"users/1", 3}, {"users/1", 4}, // one tablet, two owners' epochs
		{"users/2", 5}, {"orders/7", 0}, {"orders/8", 2}, {"orders/9", 9},
	}
	hs := map[pinKey]*Handle{}
	for _, k := range keys {
		hs[k] = w.Attach(k.tablet, k.epoch)
	}
	const interleaved, total = 40, 90
	for i := range interleaved {
		for _, k := range keys {
			writeAll(t, hs[k], payloads(k, i, i+1))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for _, k := range keys {
		wg.Go(func() { errs <- writeErr(hs[k], payloads(k, interleaved, total)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// The segment files hold what was written; where each record landed
	// gives what a replay from each segment must return.
	recs, segOf := segmentsOf(t, root, "writer")
	if len(recs) != len(keys) {
		t.Fatalf("segment files hold records of %d tablets and epochs, want %d", len(recs), len(keys))
	}
	for _, k := range keys {
		checkRecords(t, fmt.Sprintf("segment files, %v", k), recs[k], payloads(k, 0, total))
		if s := segOf[k]; s[0] == s[len(s)-1] {
			t.Fatalf("%v has all its records in segment %d: the test needs them spread", k, s[0])
		}
	}
	segs := listSegments(t, root, "writer")
	if len(segs) < 5 {
		t.Fatalf("the log has %d segments, the test needs several", len(segs))
	}

	// Replay points: the start, the first and last segments, and some
	// between (every one would make the test slow for little more).
	froms := []uint64{0}
	for i := 0; i < len(segs); i += 4 {
		froms = append(froms, segs[i])
	}
	froms = append(froms, segs[len(segs)-1])

	r := mustOpen(t, Options{Root: root, Name: "reader"})
	check := func(phase string) {
		t.Helper()
		for _, k := range keys {
			for _, from := range froms {
				want := fromSegment(payloads(k, 0, total), segOf[k], from)
				checkRecords(t, fmt.Sprintf("%s: own replay of %v from %d", phase, k, from),
					mustReplay(t, w, "writer", k, from), want)
				checkRecords(t, fmt.Sprintf("%s: foreign replay of %v from %d", phase, k, from),
					mustReplay(t, r, "writer", k, from), want)
			}
		}
		// No records: other epochs, a tablet never attached, a prefix of
		// a tablet's name.
		for _, k := range []pinKey{{"users/1", 1}, {"users/1", 6}, {"users/2", 3}, {"nobody", 3}, {"users", 3}, {"", 0}} {
			checkRecords(t, fmt.Sprintf("%s: own replay of %v", phase, k), mustReplay(t, w, "writer", k, 0), nil)
			checkRecords(t, fmt.Sprintf("%s: foreign replay of %v", phase, k), mustReplay(t, r, "writer", k, 0), nil)
		}
	}
	check("writer open")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("writer closed")
}

// TestReplayStopsOnCallbackError: an error from fn ends the replay and is
// returned (possibly wrapped), from the log itself and from another one.
func TestReplayStopsOnCallbackError(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
	k := pinKey{"t", 1}
	writeAll(t, w.Attach(k.tablet, k.epoch), payloads(k, 0, 100))
	r := mustOpen(t, Options{Root: root, Name: "r"})
	stop := errors.New("stop here")
	for _, l := range []*Log{w, r} {
		n := 0
		err := l.Replay("w", k.tablet, k.epoch, 0, func([]byte) error {
			if n++; n == 10 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || n != 10 {
			t.Fatalf("replay by %s: %d calls, err %v; want 10 calls and the callback's error", l.Name(), n, err)
		}
	}
	// The failed foreign replay did not use up the tablet's records.
	checkRecords(t, "foreign replay after a failed one", mustReplay(t, r, "w", k, 0), payloads(k, 0, 100))
}

// TestForeignLogReadOnce: the tablets of a dead server, replayed one after
// the other by one server, read its log once in all: every byte of every
// segment is read once, and every segment but the last (which may still
// grow while its writer lives) is opened once. A tablet replayed a second
// time gets a fresh read of the whole log, with the same records.
func TestForeignLogReadOnce(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "dead", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
	const tablets, perTablet = 10, 30
	var keys []pinKey
	hs := map[pinKey]*Handle{}
	for i := range tablets {
		k := pinKey{fmt.Sprintf("t/%d", i), 7}
		keys = append(keys, k)
		hs[k] = w.Attach(k.tablet, k.epoch)
	}
	for i := range perTablet {
		for _, k := range keys {
			writeAll(t, hs[k], payloads(k, i, i+1))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs := listSegments(t, root, "dead")
	if len(segs) < 4 {
		t.Fatalf("the log has %d segments, the test needs several", len(segs))
	}
	last := segs[len(segs)-1]

	cfs := newCountingFS()
	r := mustOpen(t, Options{FS: cfs, Root: root, Name: "reader"})
	for _, k := range keys {
		checkRecords(t, fmt.Sprintf("replay of %v", k), mustReplay(t, r, "dead", k, 0), payloads(k, 0, perTablet))
	}
	opens := map[uint64]int{}
	for _, s := range segs {
		path := segPath(root, "dead", s)
		n, read := cfs.counts(path)
		opens[s] = n
		if size := fileSize(t, path); read != size {
			t.Errorf("segment %d: %d bytes read by %d replays, want its %d bytes read once", s, read, tablets, size)
		}
		if s != last && n != 1 {
			t.Errorf("segment %d (not the last) opened %d times by %d replays, want once", s, n, tablets)
		}
		if s == last && (n < 1 || n > tablets) {
			t.Errorf("last segment %d opened %d times by %d replays, want 1..%d", s, n, tablets, tablets)
		}
	}

	// A second load of a tablet: its cached records were handed out, so
	// the whole log is read again.
	k := keys[3]
	checkRecords(t, fmt.Sprintf("second replay of %v", k), mustReplay(t, r, "dead", k, 0), payloads(k, 0, perTablet))
	for _, s := range segs {
		path := segPath(root, "dead", s)
		n, read := cfs.counts(path)
		if n != opens[s]+1 {
			t.Errorf("second replay of %v: segment %d opened %d times, want %d", k, s, n, opens[s]+1)
		}
		if size := fileSize(t, path); read != 2*size {
			t.Errorf("second replay of %v: %d bytes of segment %d read in all, want twice its %d", k, read, s, size)
		}
	}
}

// TestForeignLogIncremental: a server replaying the tablets of a log whose
// writer still runs reads what the writer appended since the last replay,
// and only that.
func TestForeignLogIncremental(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "alive", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
	ka, kb, kc := pinKey{"a", 1}, pinKey{"b", 1}, pinKey{"c", 1}
	a, b, c := w.Attach(ka.tablet, ka.epoch), w.Attach(kb.tablet, kb.epoch), w.Attach(kc.tablet, kc.epoch)
	for i := range 20 {
		writeAll(t, a, payloads(ka, i, i+1))
		writeAll(t, b, payloads(kb, i, i+1))
	}
	cfs := newCountingFS()
	r := mustOpen(t, Options{FS: cfs, Root: root, Name: "reader"})
	checkRecords(t, "replay of a", mustReplay(t, r, "alive", ka, 0), payloads(ka, 0, 20))

	before := listSegments(t, root, "alive")
	writeAll(t, b, payloads(kb, 20, 100))
	writeAll(t, c, payloads(kc, 0, 10))
	after := listSegments(t, root, "alive")
	if len(after) <= len(before)+1 {
		t.Fatalf("the log grew from %d to %d segments, the test needs more", len(before), len(after))
	}
	checkRecords(t, "replay of b after more writes", mustReplay(t, r, "alive", kb, 0), payloads(kb, 0, 100))
	checkRecords(t, "replay of c, written after the first replay", mustReplay(t, r, "alive", kc, 0), payloads(kc, 0, 10))
	for _, s := range after {
		// A read that goes on from where an earlier one stopped reads
		// the segment's header again (its format version says how its
		// records are checksummed), and then only the records after.
		path := segPath(root, "alive", s)
		opens, read := cfs.counts(path)
		if size := fileSize(t, path); read < size || read > size+int64(opens-1)*segmentHeaderLen {
			t.Errorf("segment %d: %d bytes read by three replays (%d reads) of a growing log, want its %d bytes read once and its header once per later read",
				s, read, opens, fileSize(t, path))
		}
	}

	// a was served: its next replay reads afresh and sees its new records.
	writeAll(t, a, payloads(ka, 20, 30))
	checkRecords(t, "second replay of a", mustReplay(t, r, "alive", ka, 0), payloads(ka, 0, 30))
}

// TestConcurrentForeignReplays: the tablets of a dead server replayed
// concurrently by one server (two loads of some tablets among them) each
// get all their records.
func TestConcurrentForeignReplays(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "dead", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
	const tablets, perTablet = 8, 20
	var keys []pinKey
	for i := range tablets {
		keys = append(keys, pinKey{fmt.Sprintf("t/%d", i), 2})
	}
	for i := range perTablet {
		for _, k := range keys {
			writeAll(t, w.Attach(k.tablet, k.epoch), payloads(k, i, i+1))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		r := mustOpen(t, Options{Root: root, Name: fmt.Sprintf("reader%d", round)})
		var wg sync.WaitGroup
		errs := make(chan error, 2*tablets)
		for i, k := range keys {
			loads := 1
			if i%3 == 0 {
				loads = 2 // the same tablet twice at once
			}
			for range loads {
				wg.Go(func() {
					got, err := replayAll(r, "dead", k, 0)
					if err == nil && !slices.Equal(got, payloads(k, 0, perTablet)) {
						err = fmt.Errorf("%d records, want %d", len(got), perTablet)
					}
					if err != nil {
						errs <- fmt.Errorf("round %d: replay of %v: %w", round, k, err)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMissingSegment: a segment a replay needs that is gone is an error
// wrapping wal.ErrCorrupt naming it, from the log itself and from
// another one. Segments below from may be gone (the log was trimmed), even
// with a segment left below them.
func TestMissingSegment(t *testing.T) {
	cases := []struct {
		name    string
		remove  []uint64
		from    uint64
		missing uint64 // 0: no error
	}{
		{"middle, replay from start", []uint64{3}, 0, 3},
		{"middle, replay from below it", []uint64{3}, 2, 3},
		{"replay point", []uint64{4}, 4, 4},
		{"trimmed past the replay point", []uint64{1, 2, 3}, 3, 3},
		{"trimmed up to the replay point", []uint64{1, 2, 3}, 4, 0},
		{"replay point after the last segment", nil, 1000, 1000},
		// A deletion of the trimmed segments that failed for one of them
		// (and the server died before retrying) leaves a gap below every
		// tablet's replay point.
		{"gap below the replay point", []uint64{2}, 4, 0},
		{"a segment left below the trimmed ones", []uint64{2, 3, 4}, 5, 0},
		{"a segment left below the trimmed ones, replay from start", []uint64{2, 3, 4}, 0, 2},
	}
	k := pinKey{"t", 1}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			w := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: 1 << 10, SyncMode: wal.SyncNone})
			writeAll(t, w.Attach(k.tablet, k.epoch), payloads(k, 0, 60))
			if segs := listSegments(t, root, "w"); len(segs) < 7 || segs[0] != 1 {
				t.Fatalf("segments %v, the test needs 1..7 at least", segs)
			}
			recs, segOf := segmentsOf(t, root, "w")
			for _, n := range tc.remove {
				if err := os.Remove(segPath(root, "w", n)); err != nil {
					t.Fatal(err)
				}
			}
			r := mustOpen(t, Options{Root: root, Name: "r"})
			for _, l := range []*Log{w, r} {
				got, err := replayAll(l, "w", k, tc.from)
				if tc.missing == 0 {
					if err != nil {
						t.Fatalf("replay by %s: %v", l.Name(), err)
					}
					checkRecords(t, "replay by "+l.Name(), got, fromSegment(recs[k], segOf[k], tc.from))
					continue
				}
				if !errors.Is(err, wal.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("segment %d ", tc.missing)) {
					t.Fatalf("replay by %s: err = %v, want ErrCorrupt naming segment %d", l.Name(), err, tc.missing)
				}
			}
		})
	}
}

// TestReplayUnknownLog: a manifest naming a log that has no segments, or a
// name that is not a plain name, is corruption.
func TestReplayUnknownLog(t *testing.T) {
	root := t.TempDir()
	l := mustOpen(t, Options{Root: root, Name: "me"})
	for _, name := range []string{"nobody", "", "..", "../me", "me/..", "a/b"} {
		for _, from := range []uint64{0, 1} {
			_, err := replayAll(l, name, pinKey{"t", 1}, from)
			if !errors.Is(err, wal.ErrCorrupt) {
				t.Errorf("replay of log %q from %d: err = %v, want ErrCorrupt", name, from, err)
			}
		}
	}
}

// frame returns the wal framing of one shared-log record (see
// wal's format.go): crc32c(length|payload) | length | payload.
func frame(k pinKey, seg uint64, p string) []byte {
	body := append(appendTag(nil, k.tablet, k.epoch), p...)
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	b = append(b, body...)
	// Format version 3: the checksum covers the segment number first.
	crc := crc32.Checksum(binary.LittleEndian.AppendUint64(nil, seg), crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(b, crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), b[4:]))
	return b
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTornTail: a log whose last segment ends in a torn record (its writer
// crashed mid-write, or is writing it now) replays its whole records
// without error, from itself and from another log, and the replay leaves
// the file as it is. When the writer completes the record, a later replay
// returns it.
func TestTornTail(t *testing.T) {
	k, other := pinKey{"t", 1}, pinKey{"other", 1}
	cases := map[string]func(late []byte) []byte{
		"half a record": func(late []byte) []byte { return late[:len(late)/2] },
		"short header":  func(late []byte) []byte { return late[:5] },
		"header only":   func(late []byte) []byte { return late[:8] },
		"zeros":         func([]byte) []byte { return make([]byte, 100) },
		"bad checksum":  func(late []byte) []byte { return append([]byte{1, 2, 3, 4}, late[4:]...) },
	}
	for name, tailOf := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			w := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: smallSegments, SyncMode: wal.SyncNone})
			hk, ho := w.Attach(k.tablet, k.epoch), w.Attach(other.tablet, other.epoch)
			for i := range 50 {
				writeAll(t, hk, payloads(k, i, i+1))
				writeAll(t, ho, payloads(other, i, i+1))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			segs := listSegments(t, root, "w")
			path := segPath(root, "w", segs[len(segs)-1])
			late := frame(k, segs[len(segs)-1], "late record")
			appendFile(t, path, tailOf(late))
			size := fileSize(t, path)

			r := mustOpen(t, Options{Root: root, Name: "r"})
			checkRecords(t, "foreign replay of other", mustReplay(t, r, "w", other, 0), payloads(other, 0, 50))
			checkRecords(t, "own replay", mustReplay(t, w, "w", k, 0), payloads(k, 0, 50))
			if got := fileSize(t, path); got != size {
				t.Fatalf("replay changed the last segment from %d to %d bytes", size, got)
			}
			if name != "half a record" {
				checkRecords(t, "foreign replay", mustReplay(t, r, "w", k, 0), payloads(k, 0, 50))
				if got := fileSize(t, path); got != size {
					t.Fatalf("replay changed the last segment from %d to %d bytes", size, got)
				}
				return
			}
			// The writer completes the record: the reader, which read
			// up to the torn record when it replayed other, reads it now.
			appendFile(t, path, late[len(late)/2:])
			want := append(payloads(k, 0, 50), "late record")
			checkRecords(t, "foreign replay after the record was completed", mustReplay(t, r, "w", k, 0), want)
			checkRecords(t, "own replay after the record was completed", mustReplay(t, w, "w", k, 0), want)
		})
	}
}

// TestCacheBounded: the records a server keeps of other logs stay within
// CacheBytes, the least recently used log going first, and replays return
// the right records whatever was dropped.
func TestCacheBounded(t *testing.T) {
	root := t.TempDir()
	const tablets, perTablet = 5, 20
	keys := func(log string) []pinKey {
		var ks []pinKey
		for i := range tablets {
			ks = append(ks, pinKey{fmt.Sprintf("%s/%d", log, i), 1})
		}
		return ks
	}
	var logBytes int64 // payload bytes of one log; the logs are alike
	for _, name := range []string{"x", "y", "z"} {
		w := mustOpen(t, Options{Root: root, Name: name, SegmentSize: smallSegments, SyncMode: wal.SyncNone})
		logBytes = 0
		for i := range perTablet {
			for _, k := range keys(name) {
				writeAll(t, w.Attach(k.tablet, k.epoch), payloads(k, i, i+1))
				logBytes += int64(len(payload(k, i)))
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cached := func(r *Log) (total int64, logs []string) {
		r.cache.mu.Lock()
		defer r.cache.mu.Unlock()
		for n := range r.cache.logs {
			logs = append(logs, n)
		}
		slices.Sort(logs)
		return r.cache.totalLocked(), logs
	}

	// Room in memory (half the budget; the other half is for records
	// spilled) for just under two logs (a replay holds the records of the
	// tablets it does not serve): reading a third evicts the one used
	// least recently.
	limit := 4*logBytes - 2
	r := mustOpen(t, Options{Root: root, Name: "r", CacheBytes: limit})
	steps := []struct {
		k    pinKey
		kept []string // the logs cached afterwards
	}{
		{keys("x")[0], []string{"x"}},
		{keys("y")[0], []string{"x", "y"}},
		{keys("x")[1], []string{"x", "y"}},
		{keys("z")[0], []string{"x", "z"}}, // y was used least recently
		{keys("z")[1], []string{"x", "z"}},
		{keys("y")[1], []string{"y", "z"}}, // x was
		{keys("y")[2], []string{"y", "z"}},
	}
	for _, s := range steps {
		log := s.k.tablet[:1]
		checkRecords(t, fmt.Sprintf("replay of %v", s.k), mustReplay(t, r, log, s.k, 0), payloads(s.k, 0, perTablet))
		if total, logs := cached(r); total > limit || !slices.Equal(logs, s.kept) {
			t.Fatalf("after replaying %v: %d bytes of logs %v cached, want at most %d bytes of logs %v",
				s.k, total, logs, limit, s.kept)
		}
	}

	// Room for nothing: every replay reads the log and keeps none of it.
	r = mustOpen(t, Options{Root: root, Name: "r2", CacheBytes: 1})
	for _, log := range []string{"x", "y", "z"} {
		for _, k := range keys(log) {
			checkRecords(t, fmt.Sprintf("replay of %v", k), mustReplay(t, r, log, k, 0), payloads(k, 0, perTablet))
			if total, logs := cached(r); total != 0 {
				t.Fatalf("after replaying %v: %d bytes of logs %v cached, want none", k, total, logs)
			}
		}
	}
}

// TestCacheDropIdle: logs not used since the cutoff are dropped; a replay
// after that reads the log again and is right.
func TestCacheDropIdle(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "w", SyncMode: wal.SyncNone})
	ka, kb := pinKey{"a", 1}, pinKey{"b", 1}
	writeAll(t, w.Attach(ka.tablet, ka.epoch), payloads(ka, 0, 10))
	writeAll(t, w.Attach(kb.tablet, kb.epoch), payloads(kb, 0, 10))
	r := mustOpen(t, Options{Root: root, Name: "r"})
	checkRecords(t, "replay of a", mustReplay(t, r, "w", ka, 0), payloads(ka, 0, 10))
	logs := func() int {
		r.cache.mu.Lock()
		defer r.cache.mu.Unlock()
		return len(r.cache.logs)
	}
	r.cache.dropIdle(time.Time{})
	if n := logs(); n != 1 {
		t.Fatalf("dropIdle(zero time) left %d logs cached, want 1", n)
	}
	r.cache.dropIdle(time.Now().Add(time.Hour))
	if n := logs(); n != 0 {
		t.Fatalf("dropIdle(an hour from now) left %d logs cached, want 0", n)
	}
	checkRecords(t, "replay of b after the log was dropped", mustReplay(t, r, "w", kb, 0), payloads(kb, 0, 10))
}
