package sstable

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// writebackFile records the write-outs started on a file and where the
// file stood at each call and at its fsync.
type writebackFile struct {
	vfs.Writable
	written int64
	starts  [][2]int64 // [off, n]
	// synced is the file's length at its fsync, startedAtSync the end of
	// the last range started by then (-1: no fsync yet).
	synced, startedAtSync int64
	fail                  bool // StartWriteback fails
}

func (f *writebackFile) Write(p []byte) (int, error) {
	n, err := f.Writable.Write(p)
	f.written += int64(n)
	return n, err
}

func (f *writebackFile) StartWriteback(off, n int64) error {
	f.starts = append(f.starts, [2]int64{off, n})
	if off+n > f.written {
		return errors.New("started past the bytes written")
	}
	if f.fail {
		return errors.New("not supported here")
	}
	return nil
}

func (f *writebackFile) Sync() error {
	f.synced = f.written
	f.startedAtSync = 0
	if k := len(f.starts); k > 0 {
		f.startedAtSync = f.starts[k-1][0] + f.starts[k-1][1]
	}
	return f.Writable.Sync()
}

// writeWritebackTable writes a table of about 3 MiB through f.
func writeWritebackTable(t *testing.T, f *writebackFile) {
	t.Helper()
	w := NewWriter(f, WriterOptions{Compression: families.CompressionNone, Bloom: families.BloomRow, BlockSize: 4 << 10})
	value := benchValue(100)
	var key, row []byte
	for i := range 25_000 {
		key, row = appendBenchKey(key, row, i)
		if err := w.Add(key, value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A table's bytes have their write-out started every half MiB as they
// are written, contiguously from the start of the file and in whole
// pages, so that Close's fsync has only the last ones to write (and the
// page cache holds at most that much of the file dirty): what keeps a
// major compaction's fsync and the kernel's dirty-page throttling from
// growing with its output (docs/BENCHMARKS.md, "Compaction growth").
func TestWriterStartsWritebackEveryHalfMiB(t *testing.T) {
	fh, err := vfs.Default.Create(filepath.Join(t.TempDir(), "a.sst"))
	if err != nil {
		t.Fatal(err)
	}
	f := &writebackFile{Writable: fh, startedAtSync: -1}
	writeWritebackTable(t, f)
	if f.synced < 2<<20 {
		t.Fatalf("the table has %d bytes, want a few MiB", f.synced)
	}
	if len(f.starts) == 0 {
		t.Fatal("no write-out started before the fsync")
	}
	var next int64
	for i, s := range f.starts {
		off, n := s[0], s[1]
		if off != next || n < writebackEvery || (off+n)%writebackPage != 0 {
			t.Fatalf("write-out %d: [%d, +%d), want from %d, at least %d bytes, ending on a page", i, off, n, next, writebackEvery)
		}
		next = off + n
	}
	// The writer's buffer (256 KiB) plus a range not yet due are what
	// the fsync may find unstarted.
	if left := f.synced - f.startedAtSync; left > writebackEvery+256<<10+writebackPage {
		t.Errorf("the fsync found %d of %d bytes never started", left, f.synced)
	}
}

// A file that cannot start a write-out is written as before, and not
// asked again.
func TestWriterWritebackUnsupported(t *testing.T) {
	fh, err := vfs.Default.Create(filepath.Join(t.TempDir(), "a.sst"))
	if err != nil {
		t.Fatal(err)
	}
	f := &writebackFile{Writable: fh, startedAtSync: -1, fail: true}
	writeWritebackTable(t, f)
	if len(f.starts) != 1 {
		t.Errorf("asked %d times to start a write-out after it failed, want once", len(f.starts))
	}
}
