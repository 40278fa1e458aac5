package sstable

import (
	"fmt"
	"testing"
)

// TestCacheChargesWhatBlocksHold fills caches through Readers of every
// compression and checks that the accounted bytes are the memory the
// blocks retain: each entry is charged its block's capacity plus the
// entry overhead (checkCacheInvariants recounts the lists), the total stays
// within the capacity, and no cached block retains much more memory than
// its length, in particular not a pooled read buffer sized for a larger
// block read before it: the table's first block holds a 200 KiB value
// that compresses to half, the others incompressible values, so that a
// reader that handed out its read buffer for blocks stored uncompressed
// would make the second block retain over 100 KiB.
func TestCacheChargesWhatBlocksHold(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	entries := randomEntries(rng, 3000, 300)
	for _, e := range entries {
		rng.Read(e.value)
	}
	entries[0].value = make([]byte, 200<<10)
	rng.Read(entries[0].value[:100<<10])
	for _, c := range allCompressions {
		path, props := writeTable(t, dir, WriterOptions{BlockSize: 2048, Compression: c}, entries)
		for _, capacity := range []int64{64 << 10, 32 << 20} {
			t.Run(fmt.Sprintf("%v/%d", c, capacity), func(t *testing.T) {
				cache := NewCache(capacity)
				r := openTable(t, path, ReaderOptions{Cache: cache})
				for round := 0; round < 2; round++ {
					it := r.NewIter(nil, nil)
					sameEntries(t, "scan", collect(t, it), entries)
					_ = it.Close()
				}
				checkCacheInvariants(t, cache)
				st := cache.Stats()
				if st.Bytes > st.Capacity {
					t.Errorf("cache accounts %d bytes over its capacity %d", st.Bytes, st.Capacity)
				}
				var blocks, held int64
				for i := range cache.shards {
					s := &cache.shards[i]
					s.mu.Lock()
					for _, e := range s.items {
						blocks++
						held += int64(cap(e.block.data)) + cacheEntryOverhead
						// Size classes waste at most 1/8 below 32 KiB,
						// page rounding at most 8 KiB above.
						if n := len(e.block.data); cap(e.block.data) > n+n/8+8<<10 {
							t.Errorf("block at %d: %d bytes retain %d", e.key.offset, n, cap(e.block.data))
						}
					}
					s.mu.Unlock()
				}
				if held != st.Bytes {
					t.Errorf("entries hold %d bytes, the cache accounts %d", held, st.Bytes)
				}
				if capacity > 1<<20 && uint64(blocks) != props.NumDataBlocks {
					t.Errorf("a cache larger than the file holds %d of %d blocks", blocks, props.NumDataBlocks)
				}
			})
		}
	}
}
