package tablet

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// Frozen fixture: testdata/v1/batches/ is a commit log written once by the
// engine's encoding of batches (batch version 1) through wal.Log, and
// stands for logs already on disks: after an upgrade a tablet replays the
// log its previous owner wrote. Every later release must decode it to
// fixtureBatches. A failure means old logs no longer replay: fix the code,
// never the fixture; a new batch version gets a fixture of its own beside
// this one. (The log framing has its own fixture in package wal.)
//
// To write the fixture when it does not exist (it never overwrites it):
//
//	go test ./tabletserver/tablet -run TestFrozenBatches -update-fixtures
var updateFixtures = flag.Bool("update-fixtures", false, "write missing frozen fixtures under testdata/")

// fixtureBatches covers every entry kind, several families, binary rows,
// empty and binary qualifiers and values, and the largest timestamp and
// sequence numbers past 32 bits.
func fixtureBatches() []batch {
	return []batch{
		{seq: 1, row: []byte("row-1"), entries: []entry{
			{family: "cf", kind: cell.KindSet, qualifier: []byte("q"), timestamp: 1_700_000_000_000_000, value: []byte("v1")},
		}},
		{seq: 2, row: []byte("row\x00\xffbin"), entries: []entry{
			{family: "cf", kind: cell.KindDeleteFamily},
			{family: "cf", kind: cell.KindSet, qualifier: []byte{}, timestamp: 0, value: []byte{}},
			{family: "meta", kind: cell.KindDeleteColumn, qualifier: []byte("q\x00"), timestamp: 5, value: cell.AppendDeleteRange(nil, 5, 9)},
			{family: "meta", kind: cell.KindSet, qualifier: []byte("big"), timestamp: 1<<63 - 1, value: bytes.Repeat([]byte{0, 1, 0xff}, 700)},
		}},
		{seq: 1 << 40, row: []byte{0}, entries: []entry{
			{family: "cf", kind: cell.KindDeleteColumn, qualifier: []byte("q"), timestamp: 0, value: cell.AppendDeleteRange(nil, 0, 0)},
		}},
		{seq: 1<<40 + 1, row: []byte("row-1"), entries: []entry{
			{family: "a-family-with-a-long-name", kind: cell.KindDeleteFamily},
			{family: "cf", kind: cell.KindDeleteFamily},
		}},
	}
}

func TestFrozenBatches(t *testing.T) {
	src := filepath.Join("testdata", "v1", "batches")
	want := fixtureBatches()
	if *updateFixtures {
		writeFixtureBatches(t, src, want)
	}
	// Replay truncates torn tails: it runs on a copy, never on testdata.
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []batch
	if _, err := wal.Replay(vfs.Default, dir, 0, func(p []byte) error {
		b, err := decodeBatch(bytes.Clone(p))
		got = append(got, b)
		return err
	}); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d batches, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.seq != w.seq || !bytes.Equal(g.row, w.row) || len(g.entries) != len(w.entries) {
			t.Fatalf("batch %d: seq %d row %q with %d entries; want %d %q %d", i, g.seq, g.row, len(g.entries), w.seq, w.row, len(w.entries))
		}
		for j, ge := range g.entries {
			we := w.entries[j]
			if ge.family != we.family || ge.kind != we.kind || !bytes.Equal(ge.qualifier, we.qualifier) || ge.timestamp != we.timestamp || !bytes.Equal(ge.value, we.value) {
				t.Errorf("batch %d entry %d: %+v, want %+v", i, j, ge, we)
			}
		}
	}
}

// writeFixtureBatches writes the batches to a new log in dir, unless dir
// exists.
func writeFixtureBatches(t *testing.T, dir string, bs []batch) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Logf("%s exists; not overwriting it", dir)
		return
	}
	l, err := wal.Open(wal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, b := range bs {
		if err := l.Append(b.encode(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", dir)
}
