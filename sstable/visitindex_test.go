package sstable

import (
	"bytes"
	"testing"
)

// TestVisitIndexIsIndexEntriesWithoutCopies: VisitIndex gives the blocks
// IndexEntries describes, in order, for the whole file and for bounds
// that cut blocks, also after Unload (it loads the index again).
func TestVisitIndexIsIndexEntriesWithoutCopies(t *testing.T) {
	entries := randomEntries(testRand(t), 5000, 20)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 256}, entries)
	r := openTable(t, path, ReaderOptions{})
	mid, late := entries[len(entries)/3].key, entries[2*len(entries)/3].key
	check := func(lower, upper []byte) {
		t.Helper()
		var got []IndexEntry // first: after Unload, VisitIndex loads the index
		r.VisitIndex(lower, upper, func(k []byte, size uint64) {
			got = append(got, IndexEntry{LastKey: bytes.Clone(k), Size: size})
		})
		want := r.IndexEntries(lower, upper)
		if len(got) != len(want) || len(want) < 2 {
			t.Fatalf("[%q, %q): VisitIndex gave %d blocks, IndexEntries %d", lower, upper, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i].LastKey, want[i].LastKey) || got[i].Size != want[i].Size {
				t.Fatalf("[%q, %q): block %d: %q/%d, want %q/%d", lower, upper, i, got[i].LastKey, got[i].Size, want[i].LastKey, want[i].Size)
			}
		}
	}
	check(nil, nil)
	check(mid, late)
	check(nil, mid)
	r.Unload()
	check(mid, nil)
}
