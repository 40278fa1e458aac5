package sstable

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// A failing disk is not a damaged file: read errors reach the caller as
// I/O errors (not ErrCorrupt, so nobody quarantines a good file), and
// write errors fail Close, so a half-written table is never taken for a
// finished one.

// TestReadFaultIsAnIOError fails every read after the first n of a file,
// for every n up to a full scan: Open or the scan fails with the injected
// error, and what was read before it was written.
func TestReadFaultIsAnIOError(t *testing.T) {
	rng := testRand(t)
	entries := randomEntries(rng, 200, 60)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{Compression: families.CompressionSnappy, Bloom: families.BloomRow, BlockSize: 512}, entries)
	ffs := vfs.NewFaulty(vfs.Default)
	for n := int64(0); ; n++ {
		var reads atomic.Int64
		ffs.Set(func(op vfs.Op, name string) error {
			if op == vfs.OpRead && name == path && reads.Add(1) > n {
				return vfs.Failf("read %d of %s", reads.Load(), name)
			}
			return nil
		})
		got, err := scanWith(path, ReaderOptions{FS: ffs})
		if err == nil {
			if n == 0 {
				t.Fatal("a file read without any read")
			}
			sameEntries(t, "scan without faults", got, entries)
			return
		}
		if !errors.Is(err, vfs.ErrInjected) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("after %d reads: error %v, want the injected error and not ErrCorrupt", n, err)
		}
		if len(got) > len(entries) {
			t.Fatalf("after %d reads: %d entries of %d", n, len(got), len(entries))
		}
		sameEntries(t, "scan cut by a read fault", got, entries[:len(got)])
	}
}

// scanWith opens path with opts and reads every entry, returning what it
// read before the first error, and that error.
func scanWith(path string, opts ReaderOptions) ([]kv, error) {
	r, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	it := r.NewIter(nil, nil)
	defer it.Close()
	var out []kv
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, kv{key: bytes.Clone(it.Key()), value: bytes.Clone(it.Value())})
	}
	return out, it.Err()
}

// TestWriteFaultFailsClose: a full disk (a short write, or a failed sync)
// fails Close, and the file left behind does not open as a table.
func TestWriteFaultFailsClose(t *testing.T) {
	entries := randomEntries(testRand(t), 100, 40)
	for _, tc := range []struct {
		name   string
		inject vfs.Injector
	}{
		{"no space on write", func(op vfs.Op, _ string) error {
			if op == vfs.OpWrite {
				return vfs.NoSpace()
			}
			return nil
		}},
		{"short write", func(op vfs.Op, _ string) error {
			if op == vfs.OpWrite {
				return &vfs.ShortWrite{N: 100, Err: vfs.NoSpace()}
			}
			return nil
		}},
		{"no space on sync", func(op vfs.Op, _ string) error {
			if op == vfs.OpSync {
				return vfs.NoSpace()
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ffs := vfs.NewFaulty(vfs.Default)
			path := filepath.Join(t.TempDir(), "000001.sst")
			f, err := ffs.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			ffs.Set(tc.inject)
			w := NewWriter(f, WriterOptions{})
			for _, e := range entries {
				if err := w.Add(e.key, e.value); err != nil {
					t.Fatalf("Add: %v (the buffer should take the whole table)", err)
				}
			}
			if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Close = %v, want ENOSPC", err)
			}
			ffs.Set(nil)
			if tc.name == "no space on sync" {
				return // every byte reached the file; only durability failed
			}
			if _, err := Open(path, ReaderOptions{FS: ffs}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open of a table cut by a full disk = %v, want ErrCorrupt", err)
			}
		})
	}
}
