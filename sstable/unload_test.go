package sstable

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/internal/offheap"
)

// TestUnloadGivesBackAndLoadsAgain checks Reader.Unload: the index's and
// filter's memory goes back at once (outside the heap: no collection
// needed), the reader reports none, and every use after it (scans, seeks,
// filter probes, reverse scans, index entries) loads them again and
// answers as before, also when many goroutines make the first use at once.
func TestUnloadGivesBackAndLoadsAgain(t *testing.T) {
	entries := randomEntries(testRand(t), 60000, 20)
	path, _ := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 256, Bloom: families.BloomRowColumn}, entries)
	before := offheap.Mapped()
	r := openTable(t, path, ReaderOptions{})
	kept, held := r.MetadataBytes(), offheap.Mapped()-before
	if held < offheap.MinSize {
		t.Fatalf("an open Reader holds %d bytes outside the heap, want its index and filter (%d bytes)", held, kept)
	}
	wantEntries := r.IndexEntries(nil, nil)
	r.Unload()
	if n := offheap.Mapped() - before; n != 0 {
		t.Errorf("an unloaded Reader holds %d bytes outside the heap, want 0", n)
	}
	if n := r.MetadataBytes(); n != 0 {
		t.Errorf("an unloaded Reader reports %d metadata bytes, want 0", n)
	}
	r.Unload() // a second Unload does nothing
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if !r.MayContainRow(cell.EncodeRow(entries[0].k.Row)) {
				t.Error("the filter lost an entry after Unload")
			}
		})
	}
	wg.Wait()
	if n := r.MetadataBytes(); n != kept {
		t.Errorf("loaded again, the Reader reports %d metadata bytes, want %d as at its open", n, kept)
	}
	checkReadsBack(t, r, entries)
	if got := r.IndexEntries(nil, nil); len(got) != len(wantEntries) {
		t.Errorf("loaded again: %d index entries, want %d", len(got), len(wantEntries))
	}
	// Each first use loads: a reverse iterator, an iterator, IndexEntries.
	r.Unload()
	rit := r.NewReverseIter(nil, nil)
	n := 0
	for rit.PrevRow() {
		n++
	}
	if err := rit.Err(); err != nil || n == 0 {
		t.Errorf("reverse scan after Unload: %d rows, err %v", n, err)
	}
	_ = rit.Close()
	r.Unload()
	it := r.NewIter(nil, nil)
	sameEntries(t, "scan after Unload", collect(t, it), entries)
	_ = it.Close()
	r.Unload()
	if got := r.IndexEntries(nil, nil); len(got) != len(wantEntries) {
		t.Errorf("IndexEntries after Unload: %d entries, want %d", len(got), len(wantEntries))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Close frees them at once, without waiting for a collection.
	if n := offheap.Mapped() - before; n != 0 {
		t.Errorf("a closed Reader holds %d bytes outside the heap, want 0", n)
	}
}

// TestUnloadedReaderReportsADamagedFile checks that a file whose metadata
// no longer decodes when an unloaded Reader loads it again fails the
// iterator with ErrCorrupt (not an empty file), and that a later use tries
// again.
func TestUnloadedReaderReportsADamagedFile(t *testing.T) {
	entries := randomEntries(testRand(t), 20000, 20)
	path, props := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 256, Bloom: families.BloomRow}, entries)
	r := openTable(t, path, ReaderOptions{})
	r.Unload()
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	for i := len(bad) - footerLen; i < len(bad); i++ {
		bad[i] ^= 0xff
	}
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	it := r.NewIter(nil, nil)
	if it.First() {
		t.Fatal("an iterator over a damaged unloaded file found an entry")
	}
	if err := it.Err(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("iterator over a damaged unloaded file: err %v, want ErrCorrupt", err)
	}
	_ = it.Close()
	if !r.MayContainRow(cell.EncodeRow(entries[0].k.Row)) {
		t.Error("MayContainRow of a file that cannot be loaded is false, want true (the read reports the error)")
	}
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if p := r.Properties(); p.NumEntries != props.NumEntries {
		t.Errorf("properties changed: %d entries, want %d", p.NumEntries, props.NumEntries)
	}
	checkReadsBack(t, r, entries)
}
