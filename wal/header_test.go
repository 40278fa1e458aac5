package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestShortSegmentBeforeRotationIsCorrupt: a segment that reads shorter
// than it was when its writer rotated (its last records missing, as an
// object store whose listing lags on its last parts shows it while it
// lists the next segment) is an error wrapping ErrCorrupt naming the
// segment, not a replay that silently stops short. A segment that is
// whole replays as before.
func TestShortSegmentBeforeRotationIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	for i := range 4 {
		if err := l.Append(fmt.Appendf(nil, "record %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _, err := replayAll(t, dir, 0); err != nil || len(got) != 5 {
		t.Fatalf("whole log: %d records, %v; want 5", len(got), err)
	}
	first := filepath.Join(dir, segmentName(1))
	st, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	// The last record ("record 3") of segment 1 is missing.
	if err := os.Truncate(first, st.Size()-int64(frameHeaderLen+len("record 3"))); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayAll(t, dir, 0)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("segment 1 short by a record: replayed %d records, err = %v; want ErrCorrupt naming %s", len(got), err, segmentName(1))
	}
}

// TestFirstSegmentOfAnOpenRecordsNoPredecessor: a Log opened over
// segments another process wrote vouches for none of them; one that
// rotates records the rotated segment's final size.
func TestFirstSegmentOfAnOpenRecordsNoPredecessor(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir})
	if err := l.Append([]byte("one")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = mustOpen(t, Options{Dir: dir})
	if h, err := ReadHeader(nil, dir, 2); err != nil || h != (Header{Version: formatVersion, Seg: 2}) {
		t.Fatalf("segment 2 (opened after segment 1) header = %+v, %v; want none recorded", h, err)
	}
	if err := l.Append([]byte("two")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	st, err := os.Stat(filepath.Join(dir, segmentName(2)))
	if err != nil {
		t.Fatal(err)
	}
	want := Header{Version: formatVersion, Seg: 3, Prev: 2, PrevLen: st.Size()}
	if h, err := ReadHeader(nil, dir, 3); err != nil || h != want {
		t.Fatalf("segment 3 (rotated from 2) header = %+v, %v; want %+v", h, err, want)
	}
}

// FuzzParseHeader: parseHeader never panics on arbitrary bytes; what it
// accepts has a known version and a length within the input, and a
// version 3 header it accepts is segment n's; every header appendHeader
// writes parses back to what was written, as its own segment's and as
// no other's (stale), and each of its proper prefixes is a partial
// header (torn), never a bad one.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{}, uint64(1), uint64(0), int64(0))
	f.Add([]byte("TABULOG\x01"), uint64(2), uint64(1), int64(28))
	f.Add(appendHeader(nil, 8, 7, 1<<30), uint64(8), uint64(1<<64-1), int64(-1))
	f.Add(appendHeader(nil, 8, 7, 1<<30), uint64(9), uint64(3), int64(5))
	f.Add(appendHeaderV2(nil, 7, 1<<30), uint64(8), uint64(3), int64(5))
	f.Add([]byte("TABULOG\x09"), uint64(4), uint64(3), int64(5))
	f.Add(make([]byte, headerLen), uint64(1), uint64(0), int64(0))
	f.Fuzz(func(t *testing.T, data []byte, n, prev uint64, prevLen int64) {
		if len(data) > headerLen {
			data = data[:headerLen]
		}
		h, verdict, why := parseHeader(data, n)
		switch verdict {
		case headerOK:
			if h.Version < 1 || h.Version > formatVersion || h.Len() > len(data) || (h.Version == formatVersion && h.Seg != n) {
				t.Fatalf("parseHeader(%x, %d) = %+v", data, n, h)
			}
		case headerBad, headerStale:
			if why == "" {
				t.Fatalf("parseHeader(%x): verdict %d without a reason", data, verdict)
			}
		}
		b := appendHeader(nil, n, prev, prevLen)
		if h, verdict, _ := parseHeader(b, n); verdict != headerOK || h != (Header{Version: formatVersion, Seg: n, Prev: prev, PrevLen: prevLen}) {
			t.Fatalf("parseHeader(appendHeader(%d, %d, %d)) = %+v, %d", n, prev, prevLen, h, verdict)
		}
		if _, verdict, _ := parseHeader(b, n+1); verdict != headerStale {
			t.Fatalf("segment %d's header read as segment %d's: verdict %d, want stale", n, n+1, verdict)
		}
		for i := range len(b) {
			if _, verdict, why := parseHeader(b[:i], n); verdict != headerPartial {
				t.Fatalf("header cut to %d bytes: verdict %d (%s), want partial", i, verdict, why)
			}
		}
	})
}

// appendHeaderV2 appends a format version 2 header, as releases before
// recycling wrote it.
func appendHeaderV2(dst []byte, prev uint64, prevLen int64) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = append(dst, 2)
	dst = binary.LittleEndian.AppendUint64(dst, prev)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(prevLen))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// TestReadSegmentTo: reading a segment again up to where an earlier read
// ended returns the same records and none appended since; a segment that
// no longer reaches that far is ErrCorrupt.
func TestReadSegmentTo(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, Options{Dir: dir, SyncMode: SyncNone})
	for i := range 3 {
		if err := l.Append(fmt.Appendf(nil, "record %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	var first []string
	end, err := ReadSegment(nil, dir, 1, 0, nil, func(p []byte) error { first = append(first, string(p)); return nil })
	if err != nil || len(first) != 3 {
		t.Fatalf("ReadSegment: %q, %v", first, err)
	}
	if err := l.Append([]byte("later")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	var again []string
	if err := ReadSegmentTo(nil, dir, 1, 0, end, func(p []byte) error { again = append(again, string(p)); return nil }); err != nil || !slices.Equal(again, first) {
		t.Fatalf("ReadSegmentTo(%d) = %q, %v; want %q", end, again, err, first)
	}
	if err := ReadSegmentTo(nil, dir, 1, 0, end+1000, func([]byte) error { return nil }); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadSegmentTo past the end: %v, want ErrCorrupt", err)
	}
}
