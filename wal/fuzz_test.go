package wal

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// FuzzReplay feeds arbitrary bytes to Replay as the last segment file. It
// must not panic; it either fails with ErrCorrupt or returns records, and a
// second replay of the (possibly truncated) file returns the same records
// without error.
func FuzzReplay(f *testing.F) {
	valid, ends := writeSegment(1, [][]byte{[]byte("alpha"), nil, []byte("gamma gamma")})
	f.Add(valid)
	f.Add(valid[:ends[0]+3])
	f.Add(valid[:headerLen])
	f.Add(valid[:4])
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	f.Add(append(valid[:ends[1]:ends[1]], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))
	flipped := slices.Clone(valid)
	flipped[headerLen+9] ^= 1
	f.Add(flipped)
	f.Add(append([]byte("TABULOG\x01"), valid[headerLen:]...)) // version 1
	dir := f.TempDir()                                         // one file rewritten per input: creating folders is slow
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, segmentName(1))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, last, err := replayAllOn(t, noSyncFS{vfs.Default}, dir, 0)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error not wrapping ErrCorrupt: %v", err)
			}
			return
		}
		if last != 1 {
			t.Fatalf("last = %d, want 1", last)
		}
		again, _, err := replayAllOn(t, noSyncFS{vfs.Default}, dir, 0)
		if err != nil || !equalPayloads(got, again) {
			t.Fatalf("second replay differs: %d vs %d records, %v", len(got), len(again), err)
		}
	})
}

// noSyncFS is a local disk whose Truncate does not fsync, so that the
// fuzzer, which cuts a torn tail on many inputs, runs at memory speed.
type noSyncFS struct{ vfs.FS }

func (noSyncFS) Truncate(name string, size int64) error { return os.Truncate(name, size) }
