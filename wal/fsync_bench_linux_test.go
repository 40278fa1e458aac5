//go:build linux

package wal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkFileSync: what one 4 KiB write and its sync cost on the
// folder of the test's temporary files, at the end of a growing file
// (what a new segment does) and over a file's already written and synced
// bytes (a recycled segment), with fsync and with fdatasync. Recycling
// rests on the second being cheaper; fdatasync would be worth adding only
// if it were cheaper still on overwritten files (docs/BENCHMARKS.md).
func BenchmarkFileSync(b *testing.B) {
	fsync := func(f *os.File) error { return f.Sync() }
	fdatasync := func(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
	for _, c := range []struct {
		name      string
		overwrite bool
		sync      func(*os.File) error
	}{
		{"append/fsync", false, fsync},
		{"append/fdatasync", false, fdatasync},
		{"overwrite/fsync", true, fsync},
		{"overwrite/fdatasync", true, fdatasync},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "f"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			block := make([]byte, 4096)
			if c.overwrite {
				// Write and sync more than the benchmark will overwrite.
				for range b.N + 1 {
					if _, err := f.Write(block); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				if _, err := f.Seek(0, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(block)))
			b.ResetTimer()
			for range b.N {
				if _, err := f.Write(block); err != nil {
					b.Fatal(err)
				}
				if err := c.sync(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
