package sharedlog

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// writeDeadLog writes a closed log called name under root holding perTablet
// records of size bytes for each of tablets tablets (epoch 1), written
// round robin as a busy server's writers would, and returns their keys.
func writeDeadLog(t testing.TB, root, name string, tablets, perTablet, size int, segmentSize int64) []pinKey {
	t.Helper()
	w, err := Open(Options{Root: root, Name: name, SegmentSize: segmentSize, SyncMode: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	var keys []pinKey
	var hs []*Handle
	for i := range tablets {
		keys = append(keys, pinKey{fmt.Sprintf("t/%02d", i), 1})
		hs = append(hs, w.Attach(keys[i].tablet, 1))
	}
	for i := range perTablet {
		for j, h := range hs {
			if _, err := h.Write(bigPayload(keys[j], i, size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// bigPayload is the i-th record of k, size bytes long.
func bigPayload(k pinKey, i, size int) []byte {
	p := fmt.Appendf(nil, "%s#%d|", k.tablet, i)
	return append(p, strings.Repeat("v", max(size-len(p), 0))...)
}

// checkBig replays k from r and checks it gets its perTablet records.
func checkBig(k pinKey, r *Log, perTablet, size int) error {
	i := 0
	err := r.Replay("dead", k.tablet, k.epoch, 0, func(p []byte) error {
		if want := bigPayload(k, i, size); string(p) != string(want) {
			return fmt.Errorf("record %d of %v: got %.20q..., want %.20q...", i, k, p, want)
		}
		i++
		return nil
	})
	if err == nil && i != perTablet {
		err = fmt.Errorf("%v: %d records, want %d", k, i, perTablet)
	}
	return err
}

// TestCacheHoldsAtMostItsBudget: while another server's log is read, the
// record bytes the cache holds never pass CacheBytes (counted at every
// change by a hook), whether the tablets of the dead server are replayed
// one after the other or concurrently, and every replay gets all its
// records, in order. With a spill folder the log is read once; without
// one (it cannot be written), the tablets that overflow read it again.
func TestCacheHoldsAtMostItsBudget(t *testing.T) {
	root := t.TempDir()
	const tablets, perTablet, size = 12, 40, 1000
	keys := writeDeadLog(t, root, "dead", tablets, perTablet, size, 4*smallSegments)
	const budget = 3 * perTablet * size // three tablets' worth of a log of twelve
	var logBytes int64
	for _, n := range listSegments(t, root, "dead") {
		logBytes += fileSize(t, segPath(root, "dead", n))
	}
	for i, tc := range []struct {
		concurrent bool
		spill      bool
	}{{false, true}, {true, true}, {false, false}, {true, false}} {
		t.Run(fmt.Sprintf("concurrent=%v,spill=%v", tc.concurrent, tc.spill), func(t *testing.T) {
			concurrent := tc.concurrent
			spillDir := t.TempDir()
			if !tc.spill {
				spillDir = filepath.Join(spillDir, "missing")
			}
			cfs := &bytesReadFS{FS: vfs.Default}
			r := mustOpen(t, Options{FS: cfs, Root: root, Name: fmt.Sprintf("reader-%d", i), CacheBytes: budget, SpillDir: spillDir})
			var mu sync.Mutex
			var peak int64
			r.cache.onHold = func(total int64) {
				mu.Lock()
				peak = max(peak, total)
				mu.Unlock()
			}
			var wg sync.WaitGroup
			errs := make(chan error, tablets)
			for _, k := range keys {
				if !concurrent {
					errs <- checkBig(k, r, perTablet, size)
					continue
				}
				wg.Go(func() { errs <- checkBig(k, r, perTablet, size) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if peak > budget {
				t.Fatalf("the cache held %d bytes at its peak, over its budget of %d", peak, budget)
			}
			if peak == 0 {
				t.Fatal("the cache held nothing: the test does not exercise it")
			}
			if total := r.cache.total; total != 0 {
				t.Fatalf("%d bytes still counted after every tablet was served", total)
			}
			// The spill file goes with the log.
			r.cache.mu.Lock()
			cl := r.cache.logs["dead"]
			r.cache.mu.Unlock()
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if cl != nil && cl.spill != nil {
				t.Fatal("the spill file is still open after Close")
			}
			read := cfs.read.Load()
			t.Logf("%d bytes read: %.1f times the log of %d bytes, with a budget of %d", read, float64(read)/float64(logBytes), logBytes, budget)
			if tc.spill {
				// Once, and a segment header more per segment (the
				// check of the size of the segment before it).
				if segs := int64(len(listSegments(t, root, "dead"))); read > logBytes+segs*segmentHeaderLen {
					t.Fatalf("%d bytes read with a spill folder, want the log's %d once", read, logBytes)
				}
				return
			}
			// A tablet that overflowed reads the log again from where it
			// stopped (keeping on the way the tablets that fit in the room
			// left): never more than once per tablet.
			if read > tablets*logBytes {
				t.Fatalf("%d bytes read: more than once per tablet", read)
			}
		})
	}
}

// TestForeignReplayLiveHeapBounded: replaying one tablet of a dead
// server's log does not hold the records of the others beyond the cache's
// budget while it reads: the live heap (after a GC) seen from inside the
// replay stays within a few MiB of where it started, for a 24 MiB log and
// a 1 MiB budget. (It used to read and copy every tablet's records before
// serving any: the whole log.)
func TestForeignReplayLiveHeapBounded(t *testing.T) {
	root := t.TempDir()
	const tablets, perTablet, size = 16, 1536, 1 << 10 // 24 MiB
	keys := writeDeadLog(t, root, "dead", tablets, perTablet, size, 4<<20)
	const budget = 1 << 20
	r := mustOpen(t, Options{Root: root, Name: "reader", CacheBytes: budget})
	live := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	base := live()
	var peak int64
	i := 0
	if err := r.Replay("dead", keys[tablets-1].tablet, 1, 0, func([]byte) error {
		if i++; i%256 == 0 || i == perTablet {
			peak = max(peak, live()-base)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != perTablet {
		t.Fatalf("%d records, want %d", i, perTablet)
	}
	t.Logf("live heap grew by at most %.1f MiB replaying one of %d tablets of a %d MiB log (budget %d MiB)",
		float64(peak)/(1<<20), tablets, tablets*perTablet*size>>20, budget>>20)
	if limit := int64(budget + 4<<20); peak > limit {
		t.Fatalf("live heap grew by %d bytes during the replay, want at most the budget and buffers (%d)", peak, limit)
	}
	// The others are right too (their records held, or read again).
	for _, k := range keys[:3] {
		if err := checkBig(k, r, perTablet, size); err != nil {
			t.Fatal(err)
		}
	}
}
