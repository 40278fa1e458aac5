package sstable

import (
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
)

// TestWriterAddDoesNotAllocate: Add copies keys and values into buffers
// reused from block to block (the data block, the compression output, the
// block trailer) and the filter keeps hashes in chunks, so a steady stream
// of Adds allocates less than once per thousand entries (about 30 blocks
// of 4 KiB): a filter chunk now and then, the index's growth.
func TestWriterAddDoesNotAllocate(t *testing.T) {
	for _, c := range allCompressions {
		f, err := vfs.Default.Create(filepath.Join(t.TempDir(), "a.sst"))
		if err != nil {
			t.Fatal(err)
		}
		w := NewWriter(f, WriterOptions{Compression: c, Bloom: families.BloomRowColumn, BlockSize: 4 << 10})
		value := benchValue(100)
		var key, row []byte
		i := 0
		add := func() {
			key, row = appendBenchKey(key, row, i)
			if err := w.Add(key, value); err != nil {
				t.Fatal(err)
			}
			i++
		}
		for range 20_000 { // past the first blocks and filter chunks
			add()
		}
		addMany := func() {
			for range 1000 {
				add()
			}
		}
		if n := testing.AllocsPerRun(20, addMany); n != 0 {
			t.Errorf("%v: %v allocations per thousand Adds", c, n)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
