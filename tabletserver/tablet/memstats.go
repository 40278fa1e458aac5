package tablet

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
	// their skiplists' arena chunks. A memtable charges its budget for
	// its chunks (memtable.go), so this equals Memtable; it is kept apart
	// so that a change of that accounting shows.
	MemtableArena int64
	// OpenFiles counts the SSTables of the current version that are
	// open, each with its index and bloom filter in memory (a file is
	// opened on its first read, not at load: tablefile.go).
	OpenFiles int
	// FileMetadata is the memory those open SSTables hold for as long as
	// they are open, outside the block cache: their decoded indexes,
	// bloom filters and properties (sstable.Reader.MetadataBytes).
	FileMetadata int64
	// Writing is the memory the SSTable writers of the flushes and
	// compactions in flight hold (sstable.Writer.MemoryBytes: output
	// buffer, block and index buffers, bloom filter builder). The readahead
	// windows of a compaction's inputs (at most 64 KiB each) are not
	// counted.
	Writing int64
	// BlockCache and BlockCacheCapacity are the bytes of blocks in
	// Options.Cache and its capacity. A server shares one cache between
	// all its tablets: these are the cache's, not the tablet's share, so
	// they must not be summed over tablets.
	BlockCache, BlockCacheCapacity int64
}

// Owned returns the bytes the tablet itself holds: its memtables' arenas,
// its open files' metadata and its writers in flight (not the shared block
// cache).
func (m MemoryStats) Owned() int64 { return m.MemtableArena + m.FileMetadata + m.Writing }

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
