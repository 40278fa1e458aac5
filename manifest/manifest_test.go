package manifest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

func sampleState() State {
	return State{
		Files: []FileRef{
			{Family: "cf1", Path: "cf1/000012.sst", FileNum: 12, Size: 4096, NumCells: 100, NumTombstones: 3,
				MinTimestamp: -5, MaxTimestamp: 1700000000000000, MinSeq: 40, MaxSeq: 90,
				NumEntries: 103, SmallestKey: []byte("a\x00\x01q"), LargestKey: []byte("z\x00\xff")},
			{Family: "cf1", Path: "cf1/000007.sst", FileNum: 7, Size: 1 << 40, NumCells: 1, MinSeq: 1, MaxSeq: 39},
			{Family: "cf2", Path: "../t-parent/cf2/000003.sst", FileNum: 3,
				Lower: []byte{0, 'a', 0xff, 0}, Upper: []byte("m\x00\x01"), MinSeq: 2, MaxSeq: 2},
		},
		ReplayPoint: 7,
		LastSeq:     90,
		NextFileNum: 13,
		RangeStart:  []byte("a\x00b"),
		RangeEnd:    []byte{0xff, 0xfe},
		Parent:      "t-parent",
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for name, s := range map[string]State{"sample": sampleState(), "zero": {}} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Save(vfs.Default, dir, s); err != nil {
				t.Fatal(err)
			}
			got, found, err := Load(vfs.Default, dir)
			if err != nil || !found {
				t.Fatalf("Load: found %v, %v", found, err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("Load = %+v\nwant %+v", got, s)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("MANIFEST.tmp left behind: %v", err)
			}
		})
	}
}

func TestEmptyBoundsLoadAsNil(t *testing.T) {
	dir := t.TempDir()
	s := State{RangeStart: []byte{}, Files: []FileRef{{Family: "f", Path: "f/1.sst", Lower: []byte{}}}}
	if err := Save(vfs.Default, dir, s); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(vfs.Default, dir)
	if err != nil || got.RangeStart != nil || got.Files[0].Lower != nil {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

func TestLoadMissing(t *testing.T) {
	s, found, err := Load(vfs.Default, t.TempDir())
	if err != nil || found || !reflect.DeepEqual(s, State{}) {
		t.Fatalf("Load of empty folder = %+v, %v, %v", s, found, err)
	}
}

func TestSaveReplaces(t *testing.T) {
	dir := t.TempDir()
	old := sampleState()
	if err := Save(vfs.Default, dir, old); err != nil {
		t.Fatal(err)
	}
	next := old
	next.Files = next.Files[1:]
	next.ReplayPoint = 9
	if err := Save(vfs.Default, dir, next); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(vfs.Default, dir)
	if err != nil || !reflect.DeepEqual(got, next) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}

// TestCrashDuringSaveKeepsOldState simulates a crash at every instant of a
// save: the next version's .tmp written up to any byte (the rename not done)
// leaves the old state; a later save still works.
func TestCrashDuringSaveKeepsOldState(t *testing.T) {
	dir := t.TempDir()
	old := sampleState()
	if err := Save(vfs.Default, dir, old); err != nil {
		t.Fatal(err)
	}
	next := old
	next.LastSeq, next.ReplayPoint = 200, 8
	b, err := encode(next)
	if err != nil {
		t.Fatal(err)
	}
	v2 := ID{Epoch: 0, Version: 2}
	for cut := 0; cut <= len(b); cut++ {
		if err := os.WriteFile(filepath.Join(dir, v2.Name()+".tmp"), b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, found, err := Load(vfs.Default, dir)
		if err != nil || !found || !reflect.DeepEqual(got, old) {
			t.Fatalf("tmp cut at %d: Load = %+v, %v, %v; want the old state", cut, got, found, err)
		}
	}
	// The crash after the rename (before the folder fsync): the new state.
	if err := os.Rename(filepath.Join(dir, v2.Name()+".tmp"), filepath.Join(dir, v2.Name())); err != nil {
		t.Fatal(err)
	}
	if got, _, err := Load(vfs.Default, dir); err != nil || !reflect.DeepEqual(got, next) {
		t.Fatalf("after rename: %+v, %v", got, err)
	}
	// A leftover tmp does not disturb the next save.
	os.WriteFile(filepath.Join(dir, ID{Epoch: 0, Version: 3}.Name()+".tmp"), []byte("garbage"), 0o644)
	if err := Save(vfs.Default, dir, old); err != nil {
		t.Fatal(err)
	}
	if got, _, err := Load(vfs.Default, dir); err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("after recovery Save: %+v, %v", got, err)
	}
}

// TestVersionsAreNewFiles: every save writes a new version and leaves the
// earlier ones as they were (on an object store: a new object, never one
// overwritten in place); the newest wins; names of releases before
// versions read as version 0 and lose to any version of their epoch;
// RemoveBefore deletes exactly the older ones.
func TestVersionsAreNewFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, Name(4)), mustEncode(t, State{NextFileNum: 1, ReplayPoint: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := map[string][]byte{}
	for v := uint64(1); v <= 3; v++ {
		if err := SaveEpoch(vfs.Default, dir, 4, State{NextFileNum: 1, ReplayPoint: v + 10}); err != nil {
			t.Fatal(err)
		}
		for name, b := range saved {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("after version %d, %s changed or went (%v)", v, name, err)
			}
		}
		id := ID{Epoch: 4, Version: v}
		b, err := os.ReadFile(filepath.Join(dir, id.Name()))
		if err != nil {
			t.Fatalf("version %d is not in %s: %v", v, id.Name(), err)
		}
		saved[id.Name()] = b
		st, got, found, err := LoadLatest(vfs.Default, dir)
		if err != nil || !found || got != id || st.ReplayPoint != v+10 {
			t.Fatalf("LoadLatest after version %d = %+v %v %v %v", v, st, got, found, err)
		}
	}
	if got := (ID{Epoch: 4, Version: 3}).Name(); got != "MANIFEST-4-v3" {
		t.Fatalf("version name %q", got)
	}
	if err := RemoveBefore(vfs.Default, dir, ID{Epoch: 4, Version: 2}); err != nil {
		t.Fatal(err)
	}
	ids, err := List(vfs.Default, dir)
	if err != nil || !reflect.DeepEqual(ids, []ID{{4, 2}, {4, 3}}) {
		t.Fatalf("after RemoveBefore v2: %v %v", ids, err)
	}
	if err := SaveVersion(vfs.Default, dir, ID{Epoch: 4}, State{}); err == nil {
		t.Fatal("saving version 0 succeeded")
	}
	for _, n := range []string{"MANIFEST-4-v0", "MANIFEST-4-v03", "MANIFEST-04-v1", "MANIFEST--v1", "MANIFEST-4-v", "MANIFEST-4-x1", "MANIFEST-4-v1-v2"} {
		if _, ok := parseName(n); ok {
			t.Errorf("parseName(%q) accepted a name no save makes", n)
		}
	}
}

func mustEncode(t *testing.T, s State) []byte {
	t.Helper()
	b, err := encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDamagedManifestIsCorrupt: every truncation of MANIFEST is ErrCorrupt
// naming the file; every single-bit flip is ErrCorrupt or (a flip that does
// not change meaning, like the case of a hex digit) the very same state —
// never a different one.
func TestDamagedManifestIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := sampleState()
	b, err := encode(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	for cut := 0; cut < len(b); cut++ {
		os.WriteFile(path, b[:cut], 0o644)
		_, _, err := Load(vfs.Default, dir)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("cut at %d: %v, want ErrCorrupt naming %s", cut, err, path)
		}
	}
	corrupt := 0
	for i := range b {
		for bit := range 8 {
			d := bytes.Clone(b)
			d[i] ^= 1 << bit
			got, err := decode(path, d)
			if errors.Is(err, ErrCorrupt) {
				corrupt++
				continue
			}
			if err != nil || !reflect.DeepEqual(got, s) {
				t.Fatalf("byte %d bit %d flipped: Load = %+v, %v", i, bit, got, err)
			}
		}
	}
	if corrupt < len(b)*8-16 {
		t.Fatalf("only %d of %d bit flips detected", corrupt, len(b)*8)
	}
}

func TestWrongVersionAndMagic(t *testing.T) {
	s := sampleState()
	b, _ := encode(s)
	for name, d := range map[string][]byte{
		"version":    reseal(bytes.Replace(b, []byte("tabula-manifest 2"), []byte("tabula-manifest 3"), 1)),
		"version 0":  reseal(bytes.Replace(b, []byte("tabula-manifest 2"), []byte("tabula-manifest 0"), 1)),
		"version 02": reseal(bytes.Replace(b, []byte("tabula-manifest 2"), []byte("tabula-manifest 02"), 1)),
		// Version 1 has no keys: a file that records them is not one.
		"keys in version 1":  reseal(bytes.Replace(b, []byte("tabula-manifest 2"), []byte("tabula-manifest 1"), 1)),
		"keys without count": reseal(bytes.Replace(b, []byte(`"num_entries":103,`), nil, 1)),
		"count without keys": reseal(bytes.Replace(b, []byte(`"largest_key":"egD/"`), []byte(`"largest_key":""`), 1)),
		"keys reversed":      reseal(bytes.Replace(b, []byte(`"largest_key":"egD/"`), []byte(`"largest_key":"AA=="`), 1)),
		"magic":              reseal(bytes.Replace(b, []byte("tabula-manifest"), []byte("tabula-manifesx"), 1)),
		"unknown":            reseal(bytes.Replace(b, []byte(`"parent"`), []byte(`"parrot"`), 1)),
		"invalid":            reseal(bytes.Replace(b, []byte(`"path":"cf1/000007.sst"`), []byte(`"path":""`), 1)),
		"extra":              reseal(bytes.Replace(b, []byte("}\n"), []byte("}{}\n"), 1)),
	} {
		if _, err := decode("MANIFEST", d); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// reseal recomputes the checksum trailer of a MANIFEST after an edit.
func reseal(b []byte) []byte {
	i := bytes.LastIndexByte(b[:len(b)-1], '\n')
	return seal(bytes.Clone(b[:i+1]))
}

// The newest epoch's manifest wins; a zombie owner rewriting its older
// epoch's manifest changes nothing a reader sees.
func TestNewestEpochWins(t *testing.T) {
	dir := t.TempDir()
	old := State{NextFileNum: 1, ReplayPoint: 1}
	if err := Save(vfs.Default, dir, old); err != nil { // epoch 0: plain MANIFEST
		t.Fatal(err)
	}
	if _, e, found, err := LoadNewest(vfs.Default, dir); err != nil || !found || e != 0 {
		t.Fatalf("LoadNewest = epoch %d, %v, %v", e, found, err)
	}
	sealed := State{NextFileNum: 7 << 32, ReplayPoint: 9}
	if err := SaveEpoch(vfs.Default, dir, 7, sealed); err != nil {
		t.Fatal(err)
	}
	zombie := State{NextFileNum: 3, ReplayPoint: 5}
	if err := SaveEpoch(vfs.Default, dir, 6, zombie); err != nil {
		t.Fatal(err)
	}
	got, e, found, err := LoadNewest(vfs.Default, dir)
	if err != nil || !found || e != 7 || got.ReplayPoint != 9 {
		t.Fatalf("LoadNewest = %+v epoch %d %v %v; want epoch 7's", got, e, found, err)
	}
	if err := RemoveOlder(vfs.Default, dir, 7); err != nil {
		t.Fatal(err)
	}
	if es, err := Epochs(vfs.Default, dir); err != nil || len(es) != 1 || es[0] != 7 {
		t.Fatalf("after RemoveOlder: %v %v", es, err)
	}
	// Names that only look like manifests are ignored.
	for _, n := range []string{"MANIFEST-", "MANIFEST-07", "MANIFEST-x", "MANIFEST-8.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, e, _, err := LoadNewest(vfs.Default, dir); err != nil || e != 7 {
		t.Fatalf("with look-alike names: epoch %d, %v", e, err)
	}
	// A damaged newest manifest is an error, never a fallback to an older one.
	if err := os.WriteFile(filepath.Join(dir, Name(9)), []byte("tabula-manifest 1\n{}\ncrc32c 00000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadNewest(vfs.Default, dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged newest manifest: %v, want ErrCorrupt", err)
	}
}

// Save writes the lowest format version that holds the state: 1 when no
// file records its keys (State.WithoutKeys: what a tablet server with
// --manifest-format 1 saves, for releases before version 2 to read), 2
// when one does.
func TestEncodeWritesTheLowestVersionThatHoldsTheState(t *testing.T) {
	s := sampleState()
	without := s.WithoutKeys()
	if !s.Files[0].HasKeys() {
		t.Fatal("WithoutKeys changed the files of the state it was called on")
	}
	for _, c := range []struct {
		name string
		s    State
		want string
	}{{"with keys", s, "tabula-manifest 2\n"}, {"without keys", without, "tabula-manifest 1\n"}} {
		b, err := encode(c.s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte(c.want)) {
			t.Errorf("%s: header %q, want %q", c.name, b[:bytes.IndexByte(b, '\n')+1], c.want)
		}
		got, err := decode("MANIFEST", b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.s) {
			t.Errorf("%s: decoded %+v, want %+v", c.name, got, c.s)
		}
	}
	for _, f := range without.Files {
		if f.NumEntries != 0 || f.SmallestKey != nil || f.LargestKey != nil {
			t.Errorf("WithoutKeys kept the keys of %s", f.Path)
		}
	}
}
