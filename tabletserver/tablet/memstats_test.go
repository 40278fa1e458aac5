package tablet

import (
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/sstable"
)

// Stats().Memory follows the memtable into the SSTables: the memtable's
// bytes while it holds the rows, then one open file whose index and
// filter are estimated at no less than the filter's bits and no more than
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
	if st.Memory.MemtableFlushing != 0 || st.Memory.OpenFiles != 0 || st.Memory.FileMetadataApprox != 0 {
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
	// estimate must cover that and cannot exceed the file.
	if minFilter := int64(rows * 96 / 80); m.FileMetadataApprox < minFilter || uint64(m.FileMetadataApprox) > st.Families["b"].Bytes {
		t.Fatalf("FileMetadataApprox = %d, want between the filter's %d bytes and the file's %d", m.FileMetadataApprox, minFilter, st.Families["b"].Bytes)
	}
	if m.Owned() != m.MemtableArena+m.FileMetadataApprox {
		t.Fatalf("Owned() = %d, want memtable arenas plus file metadata %d", m.Owned(), m.MemtableArena+m.FileMetadataApprox)
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

// The estimate of an open file's metadata adds, to the metadata blocks
// stored after the data, one decoded index entry and key per data block.
func TestFileMetadataApprox(t *testing.T) {
	for _, c := range []struct {
		name string
		p    sstable.Properties
		want int64
	}{
		{"empty", sstable.Properties{}, 0},
		{"one block", sstable.Properties{NumEntries: 10, RawKeySize: 200, NumDataBlocks: 1, DataSize: 1000, FileSize: 1300}, 300 + indexEntryOverhead + 20},
		{"four blocks", sstable.Properties{NumEntries: 100, RawKeySize: 1600, NumDataBlocks: 4, DataSize: 9000, FileSize: 10000}, 1000 + 4*(indexEntryOverhead+16)},
		{"inconsistent sizes", sstable.Properties{NumDataBlocks: 1, DataSize: 10, FileSize: 5}, 0},
	} {
		if got := fileMetadataApprox(&c.p); got != c.want {
			t.Errorf("%s: fileMetadataApprox = %d, want %d", c.name, got, c.want)
		}
	}
}
