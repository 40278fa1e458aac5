package sstable

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/offheap"
)

// TestOpenAllocatesAboutWhatItKeeps: opening a file allocates the index
// and filter it keeps (MetadataBytes), the index block it decodes them
// from, and little else: no second copy of the filter's bits, no arena of
// index keys grown by doubling. At 4M keys those copies were megabytes,
// allocated while a compaction's inputs and output were all open
// (docs/BENCHMARKS.md, "Where the memory goes at 4M keys").
func TestOpenAllocatesAboutWhatItKeeps(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates too")
	}
	entries := randomEntries(testRand(t), 40000, 20)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 256, Bloom: families.BloomRowColumn}, entries)
	index := indexBlockLen(t, path)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := Open(path, ReaderOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	alloc := int64(after.TotalAlloc - before.TotalAlloc)
	kept := r.MetadataBytes()
	t.Logf("%d data blocks: Open allocated %d bytes, keeps %d (filter %d), decoded an index block of %d",
		r.index.len(), alloc, kept, r.filter.memSize(), index)
	if slack := int64(16 << 10); alloc > kept+index+slack {
		t.Errorf("Open allocated %d bytes: more than the %d it keeps, the %d-byte index block and %d more", alloc, kept, index, slack)
	}
}

// TestOpenReadsItsTailOffTheHeap: the tail an open reads its metadata
// from (and the read of all of it when it is larger than the tail) lives
// outside the Go heap and is freed when Open returns, so an open of a file
// whose index and filter are megabytes leaves no garbage of their size for
// the collector, whose headroom doubled it in the process's peak
// (docs/BENCHMARKS.md, "The open's tail read off the heap"). The reader
// must keep nothing of the freed tail but the filter it may start (then
// kept in place, the rest given back): the scans and filter probes after
// the open read unmapped memory (a fault) or zeros (false negatives) if it
// does.
func TestOpenReadsItsTailOffTheHeap(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates too")
	}
	rng := testRand(t)
	for _, c := range []struct {
		name      string
		n, value  int
		blockSize int
	}{
		{"metadata in the tail", 100000, 100, 4096},
		{"metadata larger than the tail", 40000, 20, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			entries := randomEntries(rng, c.n, c.value)
			path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: c.blockSize, Bloom: families.BloomRow}, entries)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			mappedBefore := offheap.Mapped()
			r, err := Open(path, ReaderOptions{})
			runtime.ReadMemStats(&after)
			mapped := offheap.Mapped() - mappedBefore
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if offheap.Mapped() == 0 {
				t.Skip("no memory maps on this platform")
			}
			// The filter kept from the tail (the metadata read whole)
			// keeps none of the tail's other pages: what stays mapped is
			// the metadata, the filter's and the index's buffers each
			// rounded up to whole pages.
			if limit := r.MetadataBytes() + 2*4096; mapped > limit {
				t.Errorf("the open left %d bytes mapped, more than its %d bytes of metadata and two pages: the tail is kept", mapped, r.MetadataBytes())
			}
			if size := r.Properties().FileSize; (r.MetadataBytes() > int64(size/tailShare)) != (c.blockSize == 64) {
				t.Fatalf("%d bytes of metadata in a %d-byte file: not the case %q", r.MetadataBytes(), size, c.name)
			}
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("Open allocated %d bytes on the heap; it keeps %d off it", alloc, r.MetadataBytes())
			if r.MetadataBytes() < 2*offheap.MinSize {
				t.Fatalf("metadata of %d bytes: too small for buffers off the heap, the case tests nothing", r.MetadataBytes())
			}
			if limit := int64(64 << 10); alloc > limit {
				t.Errorf("Open allocated %d bytes on the Go heap, more than %d: its tail (or the index block) is on the heap", alloc, limit)
			}
			checkReadsBack(t, r, entries)
		})
	}
}

// indexBlockLen returns the stored length of the file's index block.
func indexBlockLen(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := decodeFooter(b[len(b)-footerLen:])
	if err != nil {
		t.Fatal(err)
	}
	return int64(ft.index.length + trailerLen)
}

// TestClosedWriterHoldsNoBuffers: Close and Abort drop the writer's output
// buffer, block and index buffers and filter builder, since its owner may
// keep it while it opens the new file (the tablet lists it among the
// writers in flight until then), and the index block of a large
// compaction is megabytes. What a closed writer still answers keeps
// working.
func TestClosedWriterHoldsNoBuffers(t *testing.T) {
	entries := randomEntries(testRand(t), 5000, 20)
	for _, abort := range []bool{false, true} {
		f, err := os.Create(t.TempDir() + "/w.sst")
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(f, WriterOptions{BlockSize: 256, Bloom: families.BloomRow, Compression: families.CompressionSnappy})
		for _, e := range entries {
			if err := w.Add(e.key, e.value); err != nil {
				t.Fatal(err)
			}
		}
		if abort {
			w.Abort()
		} else if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		held := cap(w.data.buf) + cap(w.data.restarts) + cap(w.data.lastKey) +
			cap(w.index.buf) + cap(w.index.restarts) + cap(w.index.lastKey) + cap(w.scratch)
		if w.bw != nil || w.filter != nil || held != 0 {
			t.Errorf("abort=%v: closed writer holds its output buffer (%v), filter builder (%v) or %d bytes of blocks", abort, w.bw != nil, w.filter != nil, held)
		}
		if n := w.MemoryBytes(); n != 0 {
			t.Errorf("abort=%v: MemoryBytes %d after closing", abort, n)
		}
		if !abort {
			if err := w.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if p := w.Properties(); p.NumEntries != uint64(len(entries)) || w.EstimatedSize() != p.FileSize {
				t.Errorf("after Close: %d entries, estimated size %d of a %d-byte file", p.NumEntries, w.EstimatedSize(), p.FileSize)
			}
		}
	}
}

// TestClosedReaderDropsIndexAndFilter: Close lets go of the index and the
// filter, so that a closed Reader something still points to (a stale slot
// past a slice's length) does not keep megabytes alive; iterators made
// afterwards fail with ErrClosed instead of seeing an empty file, and the
// filter answers "maybe".
func TestClosedReaderDropsIndexAndFilter(t *testing.T) {
	entries := randomEntries(testRand(t), 2000, 20)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 256, Bloom: families.BloomRow}, entries)
	r, err := Open(path, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.index.len() != 0 || r.index.keys != nil || r.index.offs != nil || r.filter != nil {
		t.Fatalf("a closed Reader holds %d index entries and filter %v", r.index.len(), r.filter != nil)
	}
	it := r.NewIter(nil, nil)
	if it.First() || !errors.Is(it.Err(), ErrClosed) || !errors.Is(it.Close(), ErrClosed) {
		t.Errorf("an iterator of a closed Reader: First/Err/Close gave %v, want ErrClosed", it.Err())
	}
	it = r.NewIter(nil, nil)
	if it.SeekGE(entries[len(entries)/2].key) || !errors.Is(it.Err(), ErrClosed) {
		t.Errorf("SeekGE on a closed Reader: %v, want ErrClosed", it.Err())
	}
	rev := r.NewReverseIter(nil, nil)
	if rev.PrevRow() || !errors.Is(rev.Err(), ErrClosed) || !errors.Is(rev.Close(), ErrClosed) {
		t.Errorf("a reverse iterator of a closed Reader: %v, want ErrClosed", rev.Err())
	}
	if !r.MayContainRow([]byte("anything")) {
		t.Error("a closed Reader's filter rules a row out")
	}
}

// TestIndexAndFilterLiveOutsideTheHeap: a Reader's decoded index and
// filter, and a Writer's index block and filter bits, are held outside
// the Go heap (internal/offheap), where the collector's headroom does not
// double them; a Writer releases its buffers when it closes, and a closed
// Reader's are released once it is unreachable.
func TestIndexAndFilterLiveOutsideTheHeap(t *testing.T) {
	// released reports whether the bytes outside the heap are back to
	// at most n. Cleanups run on their own goroutine after the collection
	// that finds a buffer unreachable: wait for them, collecting each
	// round. (Buffers other tests left behind may be released meanwhile,
	// which only lowers the count.)
	released := func(n int64) bool {
		for range 1000 {
			runtime.GC()
			if offheap.Mapped() <= n {
				return true
			}
			time.Sleep(time.Millisecond)
		}
		return false
	}
	entries := randomEntries(testRand(t), 60000, 20)
	runtime.GC()
	before := offheap.Mapped()
	f, err := os.Create(t.TempDir() + "/w.sst")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f, WriterOptions{BlockSize: 256, Bloom: families.BloomRowColumn})
	for _, e := range entries {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}
	writing := offheap.Mapped() - before
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if writing < offheap.MinSize {
		t.Errorf("a writer of %d entries in 256-byte blocks holds %d bytes outside the heap, want its index block and filter", len(entries), writing)
	}
	if n := offheap.Mapped() - before; n > 0 {
		t.Errorf("a closed writer still holds %d bytes outside the heap", n)
	}

	r, err := Open(f.Name(), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	held, kept := offheap.Mapped()-before, r.MetadataBytes()
	t.Logf("writer held %d bytes off the heap; reader holds %d, keeps %d (%d data blocks)", writing, held, kept, r.index.len())
	if held < kept*3/4 {
		t.Errorf("an open Reader holds %d bytes outside the heap of the %d its index and filter keep", held, kept)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = nil
	if !released(before) {
		t.Errorf("%d bytes outside the heap are still held after the closed Reader became unreachable", offheap.Mapped()-before)
	}
}
