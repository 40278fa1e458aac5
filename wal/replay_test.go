package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// writeSegment writes payloads as a complete segment file of segment n and
// returns its bytes and the end offset of every record.
func writeSegment(n uint64, payloads [][]byte) (file []byte, ends []int) {
	file = appendHeader(nil, n, 0, 0)
	for _, p := range payloads {
		file = appendRecord(file, recordSeed(formatVersion, n), nil, p)
		ends = append(ends, len(file))
	}
	return file, ends
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTornTailAtEveryOffset truncates the last segment at every byte offset:
// replay returns exactly the records that were whole before the cut, no
// error, and leaves the file cut at the last whole record. A log opened
// afterwards keeps working.
func TestTornTailAtEveryOffset(t *testing.T) {
	r := newRand(t)
	payloads := randomPayloads(r, 16, 40)
	full, ends := writeSegment(2, payloads)
	// Also a segment before it, which must replay whole every time.
	first, _ := writeSegment(1, [][]byte{[]byte("before")})
	dir := t.TempDir()
	for cut := 0; cut <= len(full); cut++ {
		writeFile(t, filepath.Join(dir, segmentName(1)), first)
		path := filepath.Join(dir, segmentName(2))
		writeFile(t, path, full[:cut])
		got, last, err := replayAll(t, dir, 0)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		whole := 0
		for whole < len(ends) && ends[whole] <= cut {
			whole++
		}
		want := append([][]byte{[]byte("before")}, payloads[:whole]...)
		if last != 2 || !equalPayloads(got, want) {
			t.Fatalf("cut at %d: %d records, last %d; want %d records, last 2", cut, len(got), last, len(want))
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		wantSize := 0
		if cut >= headerLen {
			wantSize = headerLen
		}
		if whole > 0 {
			wantSize = ends[whole-1]
		}
		if st.Size() != int64(wantSize) {
			t.Fatalf("cut at %d: file left at %d bytes, want %d", cut, st.Size(), wantSize)
		}
		if cut%17 == 0 || cut < headerLen+frameHeaderLen {
			// The next incarnation writes a new segment; all replays again.
			l, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append([]byte("after")); err != nil {
				t.Fatal(err)
			}
			l.Close()
			got, _, err := replayAll(t, dir, 0)
			if err != nil || !equalPayloads(got, append(want, []byte("after"))) {
				t.Fatalf("cut at %d, reopened: %d records, %v", cut, len(got), err)
			}
			os.Remove(filepath.Join(dir, segmentName(3)))
		}
	}
}

// TestZeroFilledTailIsTorn: a crash can leave the end of a file zero-filled.
func TestZeroFilledTailIsTorn(t *testing.T) {
	r := newRand(t)
	payloads := randomPayloads(r, 10, 50)
	full, ends := writeSegment(1, payloads)
	for _, keep := range []int{0, 3, 10} {
		for _, zeros := range []int{1, 7, 8, 9, 4096} {
			dir := t.TempDir()
			end := headerLen
			if keep > 0 {
				end = ends[keep-1]
			}
			b := append(bytes.Clone(full[:end]), make([]byte, zeros)...)
			writeFile(t, filepath.Join(dir, segmentName(1)), b)
			got, _, err := replayAll(t, dir, 0)
			if err != nil || !equalPayloads(got, payloads[:keep]) {
				t.Fatalf("%d records + %d zeros: got %d records, %v", keep, zeros, len(got), err)
			}
		}
	}
	// A whole segment of zeros (its header never reached the disk).
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, segmentName(1)), make([]byte, 100))
	if got, _, err := replayAll(t, dir, 0); err != nil || len(got) != 0 {
		t.Fatalf("zero segment: %d records, %v", len(got), err)
	}
}

// TestCorruptMiddleRecord flips every byte of a middle record: replay fails
// with ErrCorrupt naming the file and the record's offset, after delivering
// exactly the records before it.
func TestCorruptMiddleRecord(t *testing.T) {
	r := newRand(t)
	payloads := randomPayloads(r, 8, 40)
	payloads[4] = []byte("the middle record")
	full, ends := writeSegment(1, payloads)
	start, end := ends[3], ends[4]
	dir := t.TempDir()
	path := filepath.Join(dir, segmentName(1))
	for i := start; i < end; i++ {
		b := bytes.Clone(full)
		b[i] ^= 0x40
		writeFile(t, path, b)
		got, _, err := replayAll(t, dir, 0)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: err = %v, want ErrCorrupt", i, err)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", start)) {
			t.Fatalf("byte %d flipped: error %q does not name %s and offset %d", i, msg, path, start)
		}
		if !equalPayloads(got, payloads[:4]) {
			t.Fatalf("byte %d flipped: %d records delivered, want 4", i, len(got))
		}
		if st, _ := os.Stat(path); st.Size() != int64(len(full)) {
			t.Fatalf("byte %d flipped: corrupt file was truncated to %d", i, st.Size())
		}
	}
}

// TestCorruptLastRecordOfLastSegmentIsTorn: a bad final record with nothing
// valid after it is a torn write.
func TestCorruptLastRecordOfLastSegmentIsTorn(t *testing.T) {
	payloads := [][]byte{[]byte("a"), []byte("b"), []byte("the last one")}
	full, ends := writeSegment(1, payloads)
	full[ends[1]+10] ^= 1
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, segmentName(1)), full)
	got, _, err := replayAll(t, dir, 0)
	if err != nil || !equalPayloads(got, payloads[:2]) {
		t.Fatalf("got %q, %v", got, err)
	}
}

// TestDamageInEarlierSegmentIsCorrupt: only the last segment may have a torn
// tail; in an earlier one the same damage is corruption.
func TestDamageInEarlierSegmentIsCorrupt(t *testing.T) {
	payloads := [][]byte{[]byte("a"), []byte("b")}
	full, ends := writeSegment(1, payloads)
	second, _ := writeSegment(2, [][]byte{[]byte("c")})
	cases := map[string][]byte{
		"truncated":  full[:ends[1]-1],
		"zero tail":  append(bytes.Clone(full), 0, 0, 0, 0, 0, 0, 0, 0, 0),
		"bad header": append([]byte("XABULOG\x01"), full[headerLen:]...),
		"version":    append([]byte("TABULOG\x09"), full[headerLen:]...),
		"short":      full[:3],
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, segmentName(1)), b)
			writeFile(t, filepath.Join(dir, segmentName(2)), second)
			_, _, err := replayAll(t, dir, 0)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), segmentName(1)) {
				t.Fatalf("err = %v, want ErrCorrupt naming segment 1", err)
			}
		})
	}
	// A bad header on the last segment is corruption too, unless it is a
	// torn (prefix or zero) header.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, segmentName(1)), cases["bad header"])
	if _, _, err := replayAll(t, dir, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad header on last segment: %v", err)
	}
}

func TestMissingSegmentIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	seg3, _ := writeSegment(3, [][]byte{[]byte("x")})
	seg5, _ := writeSegment(5, [][]byte{[]byte("x")})
	writeFile(t, filepath.Join(dir, segmentName(3)), seg3)
	writeFile(t, filepath.Join(dir, segmentName(5)), seg5)
	if _, _, err := replayAll(t, dir, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("gap 3..5: %v, want ErrCorrupt", err)
	}
	got, last, err := replayAll(t, dir, 4)
	if err != nil || last != 5 || len(got) != 1 {
		t.Fatalf("replay from 4: %d records, last %d, %v", len(got), last, err)
	}
}

func TestReplayEmptyAndMissingDir(t *testing.T) {
	last, err := Replay(vfs.Default, filepath.Join(t.TempDir(), "nope"), 0, func([]byte) error { return nil })
	if err != nil || last != 0 {
		t.Fatalf("missing dir: %d, %v", last, err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "MANIFEST"), []byte("not a segment"))
	writeFile(t, filepath.Join(dir, "12.log"), []byte("not a segment name"))
	if last, err := Replay(vfs.Default, dir, 0, func([]byte) error { return nil }); err != nil || last != 0 {
		t.Fatalf("dir without segments: %d, %v", last, err)
	}
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	dir := t.TempDir()
	seg, _ := writeSegment(1, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	writeFile(t, filepath.Join(dir, segmentName(1)), seg)
	stop := errors.New("stop")
	calls := 0
	_, err := Replay(vfs.Default, dir, 0, func([]byte) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
}
