package tablet

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/sstable"
)

// Stats().Memory follows the memtable into the SSTables: the memtable's
// bytes while it holds the rows, then one open file whose index and
// filter are reported at no less than the filter's bits and no more than
// the file, and the block cache's bytes once a read has loaded a block.
func TestStatsMemoryFollowsTheData(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Cache = sstable.NewCache(1 << 20)
	tb := openTablet(t, opts)
	m := tb.Stats().Memory
	if m != (MemoryStats{BlockCacheCapacity: 1 << 20}) {
		t.Fatalf("empty tablet: Memory = %+v, want only the cache's capacity", m)
	}

	const rows = 2000
	for i := range rows {
		apply(t, tb, fmt.Sprintf("row%05d", i), set("b", "q", 1, "value"))
	}
	st := tb.Stats()
	if st.Memory.Memtable <= 0 || st.Memory.Memtable != st.MemtableBytes {
		t.Fatalf("after %d writes: Memory.Memtable = %d, MemtableBytes = %d: want the same positive number", rows, st.Memory.Memtable, st.MemtableBytes)
	}
	if st.Memory.MemtableArena < st.Memory.Memtable {
		t.Fatalf("after %d writes: MemtableArena = %d, want at least the entries' %d", rows, st.Memory.MemtableArena, st.Memory.Memtable)
	}
	if st.Memory.MemtableFlushing != 0 || st.Memory.OpenFiles != 0 || st.Memory.FileMetadata != 0 {
		t.Fatalf("before any flush: Memory = %+v, want nothing flushing and no files", st.Memory)
	}

	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	st = tb.Stats()
	m = st.Memory
	if m.Memtable != 0 || m.MemtableFlushing != 0 || m.MemtableArena != 0 {
		t.Fatalf("after the flush: Memory = %+v, want empty memtables", m)
	}
	if m.OpenFiles != 1 {
		t.Fatalf("after the flush: OpenFiles = %d, want 1", m.OpenFiles)
	}
	// A bloom filter at 1% false positives takes 9.6 bits per row; the
	// reported metadata must cover that and cannot exceed the file.
	if minFilter := int64(rows * 96 / 80); m.FileMetadata < minFilter || uint64(m.FileMetadata) > st.Families["b"].Bytes {
		t.Fatalf("FileMetadata = %d, want between the filter's %d bytes and the file's %d", m.FileMetadata, minFilter, st.Families["b"].Bytes)
	}
	if m.Owned() != m.MemtableArena+m.FileMetadata {
		t.Fatalf("Owned() = %d, want memtable arenas plus file metadata %d", m.Owned(), m.MemtableArena+m.FileMetadata)
	}
	if m.BlockCache != 0 {
		t.Fatalf("before any read: BlockCache = %d, want 0", m.BlockCache)
	}

	if _, err := tb.ReadRow(bg, []byte("row00007"), nil); err != nil {
		t.Fatal(err)
	}
	if m := tb.Stats().Memory; m.BlockCache <= 0 || m.BlockCache > m.BlockCacheCapacity {
		t.Fatalf("after a read: BlockCache = %d of %d, want a block in the cache", m.BlockCache, m.BlockCacheCapacity)
	}
}
