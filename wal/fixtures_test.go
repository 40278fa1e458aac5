package wal

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Frozen fixtures: the segments under testdata/v1/ were written once by the
// format version 1 Log, those under testdata/v2/ by the version 2 Log and
// those under testdata/v3/ by the version 3 Log (Write, Wait, Append,
// Rotate, Close), and stand for logs already on disks: a tablet server
// after an upgrade replays the logs its predecessor wrote. Every later
// release must replay them to exactly fixtureSegments. A failure means old
// logs no longer replay: fix the code, never the fixture; a new format
// version gets fixtures of its own beside these (testdata/v4/).
//
// To write the fixture when it does not exist (it never overwrites it):
//
//	go test ./wal -run TestFrozenSegments -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "write missing frozen fixtures under testdata/")

// fixtureDirs are the fixtures by format version; the last is the
// version the Log writes now, the one -update-fixtures writes.
var fixtureDirs = []struct {
	dir       string
	headerLen int
}{{"testdata/v1", headerLenV1}, {"testdata/v2", headerLenV2}, {"testdata/v3", headerLen}}

// fixtureSegments are the payloads of segments 1 and 2. They include the
// shapes a reader might trip on: an empty payload, one that looks like a
// segment header, one that starts with a frame header of its own, a few
// kilobytes with 0x00 and 0xff at the ends, and all-zero bytes at the end
// of the last segment (what a torn tail often looks like, but a valid
// record).
func fixtureSegments() [2][][]byte {
	binary := make([]byte, 300)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 300) // 4800 bytes
	large[0], large[len(large)-1] = 0, 0xff
	return [2][][]byte{
		{
			{},
			[]byte("a"),
			[]byte("row-1 put cf:q=v"),
			binary,
			[]byte("TABULOG\x01"),
			{0, 0, 0, 0, 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o'},
			large,
		},
		{
			[]byte("after rotate"),
			{0xff},
			make([]byte, 40),
		},
	}
}

func TestFrozenSegments(t *testing.T) {
	want := fixtureSegments()
	if *updateFixtures {
		writeFixtureSegments(t, fixtureDirs[len(fixtureDirs)-1].dir, want)
	}
	for _, fx := range fixtureDirs {
		t.Run(fx.dir, func(t *testing.T) { checkFixture(t, fx.dir, fx.headerLen, want) })
	}
}

func checkFixture(t *testing.T, fixtureDir string, hlen int, want [2][][]byte) {
	// Replay truncates torn tails: it runs on a copy, never on testdata.
	dir := t.TempDir()
	sizes := copyFixture(t, fixtureDir, dir)
	if len(sizes) != 2 {
		t.Fatalf("fixture has %d segments, want 2", len(sizes))
	}
	for i, payloads := range want {
		size := int64(hlen)
		for _, p := range payloads {
			size += int64(frameHeaderLen + len(p))
		}
		if name := segmentName(uint64(i + 1)); sizes[name] != size {
			t.Errorf("%s has %d bytes, its records take %d", name, sizes[name], size)
		}
	}
	// Since version 2, the rotated segment records its predecessor;
	// since version 3, its own number.
	h, err := ReadHeader(nil, dir, 2)
	wantPrev := Header{Version: 1}
	switch hlen {
	case headerLenV2:
		wantPrev = Header{Version: 2, Prev: 1, PrevLen: sizes[segmentName(1)]}
	case headerLen:
		wantPrev = Header{Version: 3, Seg: 2, Prev: 1, PrevLen: sizes[segmentName(1)]}
	}
	if err != nil || h != wantPrev {
		t.Errorf("header of segment 2 = %+v, %v; want %+v", h, err, wantPrev)
	}

	got, last, err := replayAll(t, dir, 0)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if last != 2 {
		t.Errorf("last segment %d, want 2", last)
	}
	all := append(append([][]byte(nil), want[0]...), want[1]...)
	if !equalPayloads(got, all) {
		t.Errorf("replayed %q\nwant %q", got, all)
	}
	for name, size := range sizes {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() != size {
			t.Errorf("replay changed %s: %v, %v", name, st.Size(), err)
		}
	}

	// From the replay point of a manifest written after the rotation.
	got, last, err = replayAll(t, dir, 2)
	if err != nil || last != 2 || !equalPayloads(got, want[1]) {
		t.Errorf("Replay from segment 2: %q, last %d, %v; want %q", got, last, err, want[1])
	}
}

// copyFixture copies the segment files of src into dst and returns their
// sizes by name.
func copyFixture(t *testing.T, src, dst string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, e := range entries {
		if _, ok := parseSegmentName(e.Name()); !ok {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
		sizes[e.Name()] = int64(len(b))
	}
	return sizes
}

// writeFixtureSegments writes the fixture with the Log, unless it exists.
func writeFixtureSegments(t *testing.T, fixtureDir string, segs [2][][]byte) {
	t.Helper()
	if _, err := os.Stat(fixtureDir); !errors.Is(err, os.ErrNotExist) {
		t.Logf("%s exists; not overwriting it", fixtureDir)
		return
	}
	l, err := Open(Options{Dir: fixtureDir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Segment 1: two records written before one Wait (one group-commit
	// round), then one Append per record.
	first, err := l.Write(segs[0][0])
	if err != nil {
		t.Fatal(err)
	}
	second, err := l.Write(segs[0][1])
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(second); err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(first); err != nil {
		t.Fatal(err)
	}
	for _, p := range segs[0][2:] {
		if err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := l.Rotate(); err != nil || n != 2 {
		t.Fatalf("Rotate = %d, %v", n, err)
	}
	for _, p := range segs[1] {
		if err := l.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", fixtureDir)
}

// recycledFixture is a frozen log as a crash left it after recycling:
// segment 2, and segment 3 written over segment 1's file, which held
// longer records of its first life; the process died with segment 3
// active, so its stale bytes follow its records (Close or a rotation
// would have cut them). It must replay to exactly fixtureSegments.
const recycledFixture = "testdata/v3-recycled"

func TestFrozenRecycledSegments(t *testing.T) {
	want := fixtureSegments()
	if *updateFixtures {
		writeRecycledFixture(t, want)
	}
	dir := t.TempDir()
	sizes := copyFixture(t, recycledFixture, dir)
	if len(sizes) != 2 {
		t.Fatalf("fixture has %d segments, want 2", len(sizes))
	}
	records := int64(headerLen)
	for _, p := range want[1] {
		records += int64(frameHeaderLen + len(p))
	}
	if sizes[segmentName(3)] <= records {
		t.Fatalf("segment 3 holds %d bytes, its records %d: no stale bytes", sizes[segmentName(3)], records)
	}
	if h, err := ReadHeader(nil, dir, 3); err != nil || h != (Header{Version: 3, Seg: 3, Prev: 2, PrevLen: sizes[segmentName(2)]}) {
		t.Fatalf("header of segment 3 = %+v, %v", h, err)
	}
	all := append(append([][]byte(nil), want[0]...), want[1]...)
	if got := readLikeARecoveringServer(t, dir, 2); !equalPayloads(got, all) {
		t.Fatalf("a recovering reader got %q\nwant %q", got, all)
	}
	got, last, err := replayAll(t, dir, 2)
	if err != nil || last != 3 || !equalPayloads(got, all) {
		t.Fatalf("replay = %q, last %d, %v\nwant %q", got, last, err, all)
	}
	if st, err := os.Stat(filepath.Join(dir, segmentName(3))); err != nil || st.Size() != records {
		t.Fatalf("replay left segment 3 at %d bytes, %v; want its records' %d", st.Size(), err, records)
	}
}

// writeRecycledFixture writes recycledFixture with the Log, unless it
// exists.
func writeRecycledFixture(t *testing.T, segs [2][][]byte) {
	t.Helper()
	if _, err := os.Stat(recycledFixture); !errors.Is(err, os.ErrNotExist) {
		t.Logf("%s exists; not overwriting it", recycledFixture)
		return
	}
	l, err := Open(Options{Dir: recycledFixture})
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, numbered("first life of segment 1's file, record ", 40, 200)...)
	if _, err := l.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveBefore(2); err != nil {
		t.Fatal(err)
	}
	appendAll(t, l, segs[0]...)
	if n, err := l.Rotate(); err != nil || n != 3 {
		t.Fatalf("Rotate = %d, %v", n, err)
	}
	appendAll(t, l, segs[1]...)
	abandon(t, l) // a crash: segment 3 keeps its stale bytes
	t.Logf("wrote %s", recycledFixture)
}
