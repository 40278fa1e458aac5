package manifest

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// Frozen fixtures: the MANIFEST files under testdata/v<N>/<name>/ were
// written once by Save of format version N and stand for tablet folders
// already on disks, so every later release must load them to
// manifestFixtures (v1) and manifestFixturesV2. A failure means old
// tablets no longer open: fix the code, never the fixture. A new format
// version (or a new file name) gets fixtures of its own beside these, and
// these stay: Load keeps reading a folder whose manifest is the file
// "MANIFEST" in any of these formats.
//
// The comparison is field by field over the fields the fixture's format
// version has, so that fields added later (absent from these files) do
// not break it; a version 1 file reads with no file's keys recorded
// (FileRef.HasKeys false: the engine opens such files at load).
//
// To write the fixtures of the current format version that do not exist
// yet (it never overwrites one):
//
//	go test ./manifest -run TestFrozenManifests -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "write missing frozen fixtures under testdata/")

// manifestFixtures are the states saved in the fixtures, shaped like what
// the engine saves: a new tablet, a tablet after flushes and compactions,
// and a split child referencing its parent's files.
var manifestFixtures = []struct {
	name  string
	state State
}{
	{"new-tablet", State{NextFileNum: 1}},
	{"flushed", State{
		Files: []FileRef{
			{Family: "cf1", Path: "cf1/000012.sst", FileNum: 12, Size: 1<<20 + 17, NumCells: 9000, NumTombstones: 12,
				MinTimestamp: 1_700_000_000_000_000, MaxTimestamp: 1_700_000_500_000_000, MinSeq: 4001, MaxSeq: 9000},
			{Family: "cf1", Path: "cf1/000007.sst", FileNum: 7, Size: 1 << 40, NumCells: 1, MinSeq: 1, MaxSeq: 4000},
			{Family: "meta", Path: "meta/000013.sst", FileNum: 13, Size: 200, NumTombstones: 3, MinSeq: 8999, MaxSeq: 9000},
		},
		ReplayPoint: 5,
		LastSeq:     9000,
		NextFileNum: 14,
		RangeStart:  []byte("user\x00042"),
		RangeEnd:    []byte{0xff, 0xfe, 0x00},
	}},
	{"split-child", State{
		Files: []FileRef{
			{Family: "cf1", Path: "../0123456789abcdef/cf1/000012.sst", FileNum: 12, Size: 4096, NumCells: 100,
				MinTimestamp: -5, MaxTimestamp: 42, MinSeq: 40, MaxSeq: 90,
				Lower: []byte("m\x00\x01"), Upper: []byte("t\x00\xff\x00\x01")},
			{Family: "cf2", Path: "../0123456789abcdef/cf2/000003.sst", FileNum: 3, Size: 512, NumCells: 2, NumTombstones: 1,
				MinSeq: 2, MaxSeq: 2, Lower: []byte("m\x00\x01")},
		},
		LastSeq:     90,
		NextFileNum: 13,
		RangeStart:  []byte("m"),
		RangeEnd:    []byte("t\x00"),
		Parent:      "0123456789abcdef",
	}},
}

// manifestFixturesV2 are saved by format version 2: files with their
// keys and entry counts recorded (a split child's reference records its
// parent file's whole key range), beside one without (a state built
// without them, which version 2 still allows).
var manifestFixturesV2 = []struct {
	name  string
	state State
}{
	{"flushed", State{
		Files: []FileRef{
			{Family: "cf1", Path: "cf1/000012.sst", FileNum: 12, Size: 1<<20 + 17, NumCells: 9000, NumTombstones: 12,
				MinTimestamp: 1_700_000_000_000_000, MaxTimestamp: 1_700_000_500_000_000, MinSeq: 4001, MaxSeq: 9000,
				NumEntries: 9012, SmallestKey: []byte("user\x00042\x00\x01cf1"), LargestKey: []byte("user\x00999\x00\xff")},
			{Family: "cf1", Path: "cf1/000007.sst", FileNum: 7, Size: 1 << 40, NumCells: 1, MinSeq: 1, MaxSeq: 4000},
			{Family: "meta", Path: "meta/000013.sst", FileNum: 13, Size: 200, NumTombstones: 3, MinSeq: 8999, MaxSeq: 9000,
				NumEntries: 3, SmallestKey: []byte{0}, LargestKey: []byte{0}},
		},
		ReplayPoint: 5,
		LastSeq:     9000,
		NextFileNum: 14,
		RangeStart:  []byte("user\x00042"),
		RangeEnd:    []byte{0xff, 0xfe, 0x00},
	}},
	{"split-child", State{
		Files: []FileRef{
			{Family: "cf1", Path: "../0123456789abcdef/cf1/000012.sst", FileNum: 12, Size: 4096, NumCells: 100,
				MinTimestamp: -5, MaxTimestamp: 42, MinSeq: 40, MaxSeq: 90,
				Lower: []byte("m\x00\x01"), Upper: []byte("t\x00\xff\x00\x01"),
				NumEntries: 100, SmallestKey: []byte("a\x00\x01"), LargestKey: []byte("z\x00\x01")},
		},
		LastSeq:     90,
		NextFileNum: 13,
		RangeStart:  []byte("m"),
		RangeEnd:    []byte("t\x00"),
		Parent:      "0123456789abcdef",
	}},
}

func TestFrozenManifests(t *testing.T) {
	for _, fx := range manifestFixtures {
		t.Run("v1/"+fx.name, func(t *testing.T) {
			got := loadFixture(t, filepath.Join("testdata", "v1", fx.name))
			checkStateV1(t, got, fx.state)
			for _, f := range got.Files {
				if f.HasKeys() || f.SmallestKey != nil || f.LargestKey != nil {
					t.Errorf("file %s of a version 1 manifest reads with keys recorded: %+v", f.Path, f)
				}
			}
		})
	}
	for _, fx := range manifestFixturesV2 {
		t.Run("v2/"+fx.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "v2", fx.name)
			if *updateFixtures {
				writeFixtureManifest(t, dir, fx.state)
			}
			got := loadFixture(t, dir)
			checkStateV1(t, got, fx.state)
			for i, g := range got.Files {
				w := fx.state.Files[i]
				if g.NumEntries != w.NumEntries || !bytes.Equal(g.SmallestKey, w.SmallestKey) || !bytes.Equal(g.LargestKey, w.LargestKey) {
					t.Errorf("file %d keys: %d [%q, %q], want %d [%q, %q]", i, g.NumEntries, g.SmallestKey, g.LargestKey, w.NumEntries, w.SmallestKey, w.LargestKey)
				}
			}
		})
	}
}

// loadFixture loads the fixture manifest in dir. Load only reads: it runs
// on testdata itself.
func loadFixture(t *testing.T, dir string) State {
	t.Helper()
	got, found, err := Load(vfs.Default, dir)
	if err != nil || !found {
		t.Fatalf("Load(%s): found %v, %v (tablet folders of today hold such a file)", dir, found, err)
	}
	return got
}

// checkStateV1 compares the fields of format version 1, one by one.
func checkStateV1(t *testing.T, got, want State) {
	t.Helper()
	if got.ReplayPoint != want.ReplayPoint || got.LastSeq != want.LastSeq || got.NextFileNum != want.NextFileNum {
		t.Errorf("replay point %d, last seq %d, next file %d; want %d, %d, %d",
			got.ReplayPoint, got.LastSeq, got.NextFileNum, want.ReplayPoint, want.LastSeq, want.NextFileNum)
	}
	if !bytes.Equal(got.RangeStart, want.RangeStart) || !bytes.Equal(got.RangeEnd, want.RangeEnd) || got.Parent != want.Parent {
		t.Errorf("range [%q, %q) parent %q; want [%q, %q) parent %q",
			got.RangeStart, got.RangeEnd, got.Parent, want.RangeStart, want.RangeEnd, want.Parent)
	}
	if len(got.Files) != len(want.Files) {
		t.Fatalf("%d files, want %d: %+v", len(got.Files), len(want.Files), got.Files)
	}
	for i, g := range got.Files {
		w := want.Files[i]
		if g.Family != w.Family || g.Path != w.Path || g.FileNum != w.FileNum ||
			!bytes.Equal(g.Lower, w.Lower) || !bytes.Equal(g.Upper, w.Upper) ||
			g.Size != w.Size || g.NumCells != w.NumCells || g.NumTombstones != w.NumTombstones ||
			g.MinTimestamp != w.MinTimestamp || g.MaxTimestamp != w.MaxTimestamp ||
			g.MinSeq != w.MinSeq || g.MaxSeq != w.MaxSeq {
			t.Errorf("file %d: %+v\nwant %+v", i, g, w)
		}
	}
}

// writeFixtureManifest saves s as the fixture in dir (as Save names it:
// MANIFEST-0-v1), unless dir exists.
func writeFixtureManifest(t *testing.T, dir string, s State) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Logf("%s exists; not overwriting it", dir)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Save(vfs.Default, dir, s); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", dir)
}
