package wal

import (
	"bytes"
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
	v1 := []byte("TABULOG\x01")
	for _, p := range [][]byte{[]byte("alpha"), nil} {
		v1 = appendRecord(v1, 0, nil, p)
	}
	f.Add(v1)
	// Recycled files: the header of another segment and its records (a
	// crash before the new header landed), and a new header and records
	// followed by another segment's records.
	other, _ := writeSegment(9, [][]byte{[]byte("stale one"), []byte("stale two"), nil})
	f.Add(other)
	f.Add(append(valid[:ends[1]:ends[1]], other[headerLen:]...))
	torn := slices.Clone(other)
	copy(torn, valid[:20])
	f.Add(torn)
	dir := f.TempDir() // one file rewritten per input: creating folders is slow
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

// FuzzRecycledReplay: a segment file recycled from an earlier life, in
// which it was another segment holding records and then arbitrary bytes,
// and overwritten from offset 0 with this segment's header, records and a
// torn last record, replays as exactly this segment's records: nothing of
// its earlier life, whatever its bytes, and no error.
func FuzzRecycledReplay(f *testing.F) {
	f.Add([]byte("old records and then some stale bytes"), []byte("new"), uint16(3), uint16(5))
	f.Add(bytes.Repeat([]byte{0}, 300), []byte("a longer run of new payloads than the old"), uint16(0), uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3}, []byte{}, uint16(1), uint16(9))
	dir := f.TempDir()
	path := filepath.Join(dir, segmentName(5))
	f.Fuzz(func(t *testing.T, oldBytes, newBytes []byte, oldN, torn uint16) {
		// The earlier life: segment 3's header and records (payloads
		// cut from oldBytes), then the rest of oldBytes as they are.
		file := appendHeader(nil, 3, 2, 100)
		rest := oldBytes
		for range oldN % 16 {
			n := min(len(rest), int(oldN)%23)
			file = appendRecord(file, recordSeed(formatVersion, 3), nil, rest[:n])
			rest = rest[n:]
		}
		file = append(file, rest...)
		// This life: segment 5's header and records (newBytes cut in
		// pieces), then part of one more record, over the old bytes.
		now := appendHeader(nil, 5, 0, 0)
		var want [][]byte
		for p := newBytes; len(p) > 0; {
			n := min(len(p), 1+int(p[0])%17)
			now = appendRecord(now, recordSeed(formatVersion, 5), nil, p[:n])
			want = append(want, p[:n])
			p = p[n:]
		}
		end := len(now)
		last := appendRecord(nil, recordSeed(formatVersion, 5), nil, []byte("torn record"))
		now = append(now, last[:int(torn)%len(last)]...)
		if len(now) > len(file) {
			file = append(file, make([]byte, len(now)-len(file))...)
		}
		copy(file, now)
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _, err := replayAllOn(t, noSyncFS{vfs.Default}, dir, 0)
		if err != nil || !equalPayloads(got, want) {
			t.Fatalf("replay = %d records, %v; want %d records", len(got), err, len(want))
		}
		if st, err := os.Stat(path); err != nil || st.Size() != int64(end) {
			t.Fatalf("replay left %d bytes, %v; want them cut at %d", st.Size(), err, end)
		}
	})
}
