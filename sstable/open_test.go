package sstable

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// sizedLog is a readLog that can also open a file by a size it is told
// (vfs.SizedFiles), as an object store does without a LIST, and counts
// both kinds of open. A file opened by a size that is not its own reads
// as an object store's would: every read fails.
type sizedLog struct {
	readLog
	opens, sizedOpens int
}

func (l *sizedLog) Open(name string) (vfs.Readable, error) {
	l.opens++
	return l.readLog.Open(name)
}

func (l *sizedLog) OpenSized(name string, size int64) (vfs.Readable, error) {
	l.sizedOpens++
	f, err := l.readLog.Open(name)
	if err != nil {
		return nil, err
	}
	if f.Size() != size {
		return &wrongSize{Readable: f, size: size}, nil
	}
	return f, nil
}

type wrongSize struct {
	vfs.Readable
	size int64
}

func (w *wrongSize) Size() int64 { return w.size }

func (w *wrongSize) ReadAt(p []byte, off int64) (int, error) {
	return 0, fmt.Errorf("the object is not %d bytes long", w.size)
}

// TestOpenReadsItsMetadataInOneRead: an open reads the footer and the
// metadata blocks (properties, filter, index) with one read of the file's
// tail when they fit in it, and with one more read of all of them when
// they do not: on an object store a read is a GET, and an open made four
// (docs/BENCHMARKS.md "Store requests per tablet load"). The file reads
// back whole either way.
func TestOpenReadsItsMetadataInOneRead(t *testing.T) {
	rng := testRand(t)
	for _, c := range []struct {
		name      string
		n         int
		blockSize int
		reads     int
	}{
		{"small metadata", 4000, 4096, 1},
		// Blocks of one entry: the index is a third of the file, past
		// the tail read first.
		{"large metadata", 20000, 16, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			entries := randomEntries(rng, c.n, 100)
			path, _ := writeTable(t, t.TempDir(), WriterOptions{Compression: families.CompressionSnappy, BlockSize: c.blockSize, Bloom: families.BloomRow}, entries)
			log := &readLog{FS: vfs.Default}
			r := openTable(t, path, ReaderOptions{FS: log})
			defer r.Close()
			if reads := log.take(); len(reads) != c.reads {
				t.Errorf("Open made %d reads %v, want %d", len(reads), reads, c.reads)
			}
			if size := r.Properties().FileSize; c.reads == 2 && r.MetadataBytes() < int64(min(size, max(minTail, size/tailShare))) {
				t.Fatalf("the metadata (%d bytes in memory) fits the tail read of a %d-byte file: the case tests nothing", r.MetadataBytes(), size)
			}
			checkReadsBack(t, r, entries)
		})
	}
}

// TestOpenBySize: with ReaderOptions.Size on an FS that opens files by
// their size, Open does so (no lookup of the file); a size that is not
// the file's falls back to opening it by name, and the file reads whole.
func TestOpenBySize(t *testing.T) {
	entries := randomEntries(testRand(t), 2000, 100)
	path, props := writeTable(t, t.TempDir(), WriterOptions{Bloom: families.BloomRow}, entries)
	for _, c := range []struct {
		size              int64
		opens, sizedOpens int
	}{
		{int64(props.FileSize), 0, 1},
		{int64(props.FileSize) + 7, 1, 1},
		{int64(props.FileSize) - 7, 1, 1},
		{0, 1, 0}, // unknown: opened by name
	} {
		l := &sizedLog{readLog: readLog{FS: vfs.Default}}
		r := openTable(t, path, ReaderOptions{FS: l, Size: c.size})
		if l.opens != c.opens || l.sizedOpens != c.sizedOpens {
			t.Errorf("Open with Size %d (the file has %d bytes): %d opens by name, %d by size; want %d, %d", c.size, props.FileSize, l.opens, l.sizedOpens, c.opens, c.sizedOpens)
		}
		if r.Properties().FileSize != props.FileSize {
			t.Errorf("Open with Size %d: FileSize %d, want %d", c.size, r.Properties().FileSize, props.FileSize)
		}
		it := r.NewIter(nil, nil)
		sameEntries(t, fmt.Sprintf("full scan (Size %d)", c.size), collect(t, it), entries)
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// checkReadsBack checks that r reads entries back whole: a full scan,
// seeks, and no false negative of its filter.
func checkReadsBack(t *testing.T, r *Reader, entries []kv) {
	t.Helper()
	it := r.NewIter(nil, nil)
	sameEntries(t, "full scan", collect(t, it), entries)
	checkSeeks(t, it, entries)
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	checkBloomNoFalseNegatives(t, r, entries)
}
