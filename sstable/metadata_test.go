package sstable

import (
	"testing"

	"github.com/tabuladb/tabula/families"
)

// TestMetadataBytesCountsIndexAndFilter checks what MetadataBytes reports:
// at least the filter's bits and the index's keys and entries (12 bytes
// each beside the key), and no more than that plus the Reader and
// properties; a file without a filter
// reports no filter memory.
func TestMetadataBytesCountsIndexAndFilter(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	entries := randomEntries(rng, 5000, 200)
	for _, bloom := range []families.Bloom{families.BloomNone, families.BloomRow, families.BloomRowColumn} {
		path, _ := writeTable(t, dir, WriterOptions{BlockSize: 1024, Bloom: bloom}, entries)
		r := openTable(t, path, ReaderOptions{})
		var keys int64
		for _, e := range r.IndexEntries(nil, nil) {
			keys += int64(len(e.LastKey))
		}
		var filter int64
		if r.filter != nil {
			filter = r.filter.memSize()
		}
		if (filter == 0) != (bloom == families.BloomNone) {
			t.Fatalf("bloom %v: filter of %d bytes", bloom, filter)
		}
		// 12 bytes an entry beside its key (blockIndex): a 4-byte key end
		// and an 8-byte block offset, and one more offset for the end.
		blocks := int64(r.index.len())
		index := keys + 12*blocks + 8
		got := r.MetadataBytes()
		props := int64(len(r.props.SmallestKey) + len(r.props.LargestKey))
		if lo, hi := index+filter, index+filter+props+1<<10; got < lo || got > hi {
			t.Errorf("bloom %v: MetadataBytes %d, want within [%d, %d] (index %d, filter %d)", bloom, got, lo, hi, index, filter)
		}
		t.Logf("bloom %v: %d entries in %d blocks: index %d bytes, filter %d bytes, MetadataBytes %d",
			bloom, len(entries), blocks, index, filter, got)
	}
}
