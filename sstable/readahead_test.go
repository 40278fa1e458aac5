package sstable

import (
	"bytes"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// readLog is a file system that records the data reads (offset and length)
// made through the files it opens.
type readLog struct {
	vfs.FS
	mu    sync.Mutex
	reads [][2]uint64
}

func (l *readLog) Open(name string) (vfs.Readable, error) {
	f, err := l.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &loggedFile{Readable: f, log: l}, nil
}

func (l *readLog) take() [][2]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.reads
	l.reads = nil
	return r
}

type loggedFile struct {
	vfs.Readable
	log *readLog
}

func (f *loggedFile) ReadAt(p []byte, off int64) (int, error) {
	f.log.mu.Lock()
	f.log.reads = append(f.log.reads, [2]uint64{uint64(off), uint64(len(p))})
	f.log.mu.Unlock()
	return f.Readable.ReadAt(p, off)
}

// readaheadTable writes a table of many small blocks and opens it through a
// readLog, with no cache unless c is set.
func readaheadTable(t *testing.T, c *Cache) (*Reader, *readLog, []kv) {
	rng := testRand(t)
	entries := randomEntries(rng, 4000, 100)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{Compression: families.CompressionSnappy, BlockSize: 512}, entries)
	log := &readLog{FS: vfs.Default}
	r := openTable(t, path, ReaderOptions{FS: log, Cache: c})
	log.take() // the metadata reads of Open
	return r, log, entries
}

// TestScanReadsAhead: a full scan of a file of many blocks reads it in a
// few large reads, not one per block, and returns every entry.
func TestScanReadsAhead(t *testing.T) {
	r, log, entries := readaheadTable(t, nil)
	it := r.NewIter(nil, nil)
	sameEntries(t, "scan", collect(t, it), entries)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	reads := log.take()
	blocks := r.index.len()
	if blocks < 200 {
		t.Fatalf("only %d blocks: the test needs many", blocks)
	}
	// Three blocks on their own, then windows of 32 and 64 KiB.
	dataBytes := r.index.handle(blocks - 1).end()
	if want := 3 + 4 + int(dataBytes/maxReadahead) + 1; len(reads) > want {
		t.Fatalf("scan of %d blocks (%d bytes) made %d reads, want at most %d", blocks, dataBytes, len(reads), want)
	}
	// Every byte of the data blocks was read once, in order.
	next := uint64(0)
	for _, rd := range reads {
		if rd[0] != next {
			t.Fatalf("read at %d, want %d (reads %v)", rd[0], next, reads)
		}
		if rd[1] > maxReadahead {
			t.Fatalf("read of %d bytes is larger than the largest window", rd[1])
		}
		next += rd[1]
	}
	if next != dataBytes {
		t.Fatalf("reads ended at %d, data blocks at %d", next, dataBytes)
	}
}

// TestReadaheadStopsAtTheUpperBound: a window never reads past the block
// that holds the iterator's upper bound.
func TestReadaheadStopsAtTheUpperBound(t *testing.T) {
	r, log, entries := readaheadTable(t, nil)
	for _, frac := range []int{3, 5, 10, 50} {
		upper := entries[len(entries)*(frac-1)/frac].key
		it := r.NewIter(nil, upper)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, e := range entries {
			if bytes.Compare(e.key, upper) < 0 {
				want++
			}
		}
		if n != want {
			t.Fatalf("scan below %q saw %d entries, want %d", upper, n, want)
		}
		lo, hi := r.blocksFor(nil, upper)
		limit := r.index.handle(hi - 1).end()
		for _, rd := range log.take() {
			if rd[0]+rd[1] > limit {
				t.Fatalf("upper bound in block %d (of %d, from %d) ending at %d: a read reached %d", hi-1, r.index.len(), lo, limit, rd[0]+rd[1])
			}
		}
	}
}

// TestSeeksDoNotReadAhead: an iterator that jumps between distant keys
// reads one block per seek, as a point read does.
func TestSeeksDoNotReadAhead(t *testing.T) {
	r, log, entries := readaheadTable(t, nil)
	it := r.NewIter(nil, nil)
	defer it.Close()
	seeks := 0
	for i := 0; i < len(entries); i += len(entries) / 40 {
		if !it.SeekGE(entries[i].key) || !bytes.Equal(it.Key(), entries[i].key) {
			t.Fatalf("SeekGE(%q) did not find it (err %v)", entries[i].key, it.Err())
		}
		seeks++
	}
	reads := log.take()
	if len(reads) > seeks {
		t.Fatalf("%d seeks made %d reads", seeks, len(reads))
	}
	for _, rd := range reads {
		if rd[1] > 2*512+trailerLen+64 {
			t.Fatalf("a seek read %d bytes: more than its block", rd[1])
		}
	}
}

// TestReadaheadWithCache: blocks the cache holds are served from it; the
// blocks between them still come in windows and every entry is returned.
func TestReadaheadWithCache(t *testing.T) {
	c := NewCache(1 << 20)
	r, log, entries := readaheadTable(t, c)
	// Warm every third block.
	for i := 0; i < r.index.len(); i += 3 {
		if _, err := r.dataBlock(i, true); err != nil {
			t.Fatal(err)
		}
	}
	log.take()
	it := r.NewIter(nil, nil)
	sameEntries(t, "scan", collect(t, it), entries)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if reads := log.take(); len(reads) > r.index.len()/8 {
		t.Fatalf("scan of %d blocks, a third of them cached, made %d reads", r.index.len(), len(reads))
	}
}
