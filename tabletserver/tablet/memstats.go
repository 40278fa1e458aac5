package tablet

import "github.com/tabuladb/tabula/sstable"

// MemoryStats says where a tablet's memory goes, in bytes, so that an
// operator can tell the memtables, the open SSTables' metadata and the
// block cache apart (docs/OPERATIONS.md "Metrics"). The Go runtime's own
// overhead (the garbage collector lets the heap grow to about twice what
// is live with GOGC=100) comes on top and is not counted here.
type MemoryStats struct {
	// Memtable is the memory of the active memtable and of the memtables
	// being flushed: what the tablet charges to its MemoryBudget.
	Memtable int64
	// MemtableFlushing is the part of Memtable held by memtables that are
	// being written out (freed when their flush is published).
	MemtableFlushing int64
	// MemtableArena is the memory those memtables have really allocated:
	// their skiplists' arena chunks, at least Memtable (chunks are
	// allocated ahead of the entries that fill them, and grow by
	// doubling up to 4 MiB, so a memtable can hold up to about twice its
	// entries' bytes).
	MemtableArena int64
	// OpenFiles counts the SSTables of the current version, each held
	// open with its index and bloom filter in memory.
	OpenFiles int
	// FileMetadataApprox approximates the memory those open SSTables hold
	// for as long as they are open: their index and bloom filter. It is
	// an estimate from each file's properties (fileMetadataApprox), not
	// a count of allocated bytes: TestMeasureMemory found it 8 % above
	// a fresh reader's heap for its 1M- and 4M-row files; it
	// overestimates the index most, so a file with a small filter is
	// overestimated more (21 % for 4M rows and an empty filter).
	FileMetadataApprox int64
	// BlockCache and BlockCacheCapacity are the bytes of blocks in
	// Options.Cache and its capacity. A server shares one cache between
	// all its tablets: these are the cache's, not the tablet's share, so
	// they must not be summed over tablets.
	BlockCache, BlockCacheCapacity int64
}

// Owned returns the bytes the tablet itself holds: its memtables' arenas
// and its open files' metadata (not the shared block cache).
func (m MemoryStats) Owned() int64 { return m.MemtableArena + m.FileMetadataApprox }

// indexEntryOverhead is the in-memory cost of one index entry besides its
// key's bytes: the key's slice header and the block handle (offset,
// length), as the sstable reader holds them.
const indexEntryOverhead = 24 + 16

// fileMetadataApprox estimates what an open SSTable holds in memory: its
// metadata blocks as stored (everything after the data blocks: the bloom
// filter, stored uncompressed and loaded as is, the properties, the
// index and the footer) plus, for each index entry (one per data block),
// the slice header and handle of the decoded entry and one average key,
// since the reader keeps every block's last key decoded.
//
// An approximation until the sstable reader reports its own memory (the
// exact number needs an accessor such as sstable.Reader.MemoryBytes:
// len(index) entries and their keys' capacities, plus the filter's bits).
func fileMetadataApprox(p *sstable.Properties) int64 {
	if p.FileSize < p.DataSize {
		return 0
	}
	meta := p.FileSize - p.DataSize
	var avgKey uint64
	if p.NumEntries > 0 {
		avgKey = p.RawKeySize / p.NumEntries
	}
	return int64(meta + p.NumDataBlocks*(indexEntryOverhead+avgKey))
}

// memtableBytes returns the bytes of the active and flushing memtables'
// entries, the part of them being flushed, and the memtables' arenas.
func (t *Tablet) memtableBytes() (total, flushing, arena int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mem == nil {
		return 0, 0, 0
	}
	total, arena = t.mem.bytes.Load(), t.mem.arenaBytes()
	for _, im := range t.imm {
		n := im.m.bytes.Load()
		total += n
		flushing += n
		arena += im.m.arenaBytes()
	}
	return total, flushing, arena
}

// arenaBytes returns the bytes of the chunks the memtable's skiplists have
// allocated. Chunks are published copy-on-write (memtable.go), so this is
// safe beside an insert.
func (m *memtable) arenaBytes() int64 {
	var n int64
	for _, s := range *m.lists.Load() {
		for _, c := range *s.chunks.Load() {
			n += int64(cap(c))
		}
	}
	return n
}
