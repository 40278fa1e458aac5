package sstable

import "testing"

// TestDontFillCacheLeavesTheCacheAlone scans a file through a cache with
// DontFillCache: it reads the right entries, misses every block and adds
// none; a normal scan then fills the cache, and a DontFillCache scan after
// it hits the cached blocks.
func TestDontFillCacheLeavesTheCacheAlone(t *testing.T) {
	rng := testRand(t)
	entries := randomEntries(rng, 2000, 100)
	path, props := writeTable(t, t.TempDir(), WriterOptions{BlockSize: 1024}, entries)
	c := NewCache(32 << 20)
	r := openTable(t, path, ReaderOptions{Cache: c})
	scan := func(noFill bool) {
		it := r.NewIter(nil, nil)
		if noFill {
			it.DontFillCache()
		}
		sameEntries(t, "scan", collect(t, it), entries)
		_ = it.Close()
	}
	scan(true)
	if st := c.Stats(); st.Bytes != 0 || st.Misses != props.NumDataBlocks || st.Hits != 0 {
		t.Fatalf("after a DontFillCache scan of %d blocks: %+v", props.NumDataBlocks, st)
	}
	scan(false)
	filled := c.Stats()
	if filled.Bytes == 0 || filled.Misses != 2*props.NumDataBlocks {
		t.Fatalf("after a normal scan: %+v", filled)
	}
	scan(true)
	if st := c.Stats(); st.Hits != props.NumDataBlocks || st.Misses != filled.Misses || st.Bytes != filled.Bytes {
		t.Fatalf("a DontFillCache scan of a cached file: %+v, before %+v", st, filled)
	}
	// InitIter forgets the setting.
	it := r.NewIter(nil, nil)
	it.DontFillCache()
	_ = it.Close()
	r.InitIter(it, nil, nil)
	if it.noFill {
		t.Error("InitIter kept DontFillCache")
	}
	_ = it.Close()
}
