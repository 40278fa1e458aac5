package sstable

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

func TestCacheHitsAndMisses(t *testing.T) {
	c := NewCache(1 << 20)
	if _, ok := c.get(1, 0); ok {
		t.Fatal("hit in an empty cache")
	}
	c.put(1, 0, []byte("block-a"))
	c.put(2, 0, []byte("block-b"))
	if b, ok := c.get(1, 0); !ok || string(b) != "block-a" {
		t.Fatalf("get(1, 0) = %q, %v", b, ok)
	}
	if b, ok := c.get(2, 0); !ok || string(b) != "block-b" {
		t.Fatalf("get(2, 0) = %q, %v: the file id is part of the key", b, ok)
	}
	st := c.Stats()
	if st.Hits != 2 || st.Misses != 1 || st.Bytes != 14 || st.Capacity != 1<<20 {
		t.Fatalf("stats %+v", st)
	}
	c.put(1, 0, []byte("replaced"))
	if st := c.Stats(); st.Bytes != 15 {
		t.Fatalf("bytes after replacing %d, want 15", st.Bytes)
	}
	c.EvictFile(1)
	if _, ok := c.get(1, 0); ok {
		t.Fatal("EvictFile left the file's block")
	}
	if st := c.Stats(); st.Bytes != 7 {
		t.Fatalf("bytes after EvictFile %d, want 7", st.Bytes)
	}
}

func TestCacheEvictsLeastRecentlyUsedUnderCapacity(t *testing.T) {
	const capacity, blockLen = 10 << 10, 1 << 10
	c := NewCache(capacity) // one shard: LRU order is exact
	block := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, blockLen) }
	for i := 0; i < 10; i++ {
		c.put(7, uint64(i), block(i))
	}
	if _, ok := c.get(7, 0); !ok { // 0 becomes the most recently used
		t.Fatal("block 0 missing before eviction")
	}
	c.put(7, 10, block(10)) // evicts 1, the least recently used
	if _, ok := c.get(7, 1); ok {
		t.Error("block 1 survived eviction")
	}
	for _, i := range []int{0, 2, 9, 10} {
		if b, ok := c.get(7, uint64(i)); !ok || !bytes.Equal(b, block(i)) {
			t.Errorf("block %d missing or wrong after eviction", i)
		}
	}
	if st := c.Stats(); st.Bytes > capacity {
		t.Errorf("cache holds %d bytes, capacity %d", st.Bytes, capacity)
	}
	c.put(7, 99, make([]byte, capacity+1)) // larger than the cache: not kept
	if _, ok := c.get(7, 99); ok {
		t.Error("a block larger than the cache was kept")
	}
	if NewCache(0).put(1, 1, []byte("x")); NewCache(0).Stats().Bytes != 0 {
		t.Error("a zero cache holds bytes")
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	rng := testRand(t)
	c := NewCache(16 << 20) // 4 shards, too small for every block: evictions
	const workers, ops, pad = 8, 1000, 32 << 10
	seeds := make([]int64, workers)
	for i := range seeds {
		seeds[i] = rng.Int63()
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < ops; i++ {
				id, off := uint64(w%3), uint64((int64(i)*seeds[w])%500)
				want := fmt.Appendf(nil, "%d/%d", id, off)
				if b, ok := c.get(id, off); ok && (len(b) != len(want)+pad || !bytes.Equal(b[:len(want)], want)) {
					t.Errorf("get(%d, %d) = %q", id, off, b[:min(len(b), 20)])
					return
				}
				c.put(id, off, append(want, make([]byte, pad)...))
			}
		}(w)
	}
	wg.Wait()
	st := c.Stats()
	if st.Hits+st.Misses != workers*ops || st.Hits == 0 || st.Bytes > st.Capacity {
		t.Errorf("stats %+v after %d gets", st, workers*ops)
	}
}

// TestReaderUsesCache checks that a second scan is served from the cache
// and that two readers sharing it do not see each other's blocks.
func TestReaderUsesCache(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	c := NewCache(32 << 20)
	e1, e2 := randomEntries(rng, 400, 100), randomEntries(rng, 400, 100)
	p1, props := writeTable(t, dir, WriterOptions{BlockSize: 1024}, e1)
	p2, _ := writeTable(t, dir, WriterOptions{BlockSize: 1024}, e2)
	r1 := openTable(t, p1, ReaderOptions{Cache: c})
	r2 := openTable(t, p2, ReaderOptions{Cache: c})
	for round := 0; round < 2; round++ {
		for _, x := range []struct {
			r *Reader
			e []kv
		}{{r1, e1}, {r2, e2}} {
			it := x.r.NewIter(nil, nil)
			sameEntries(t, "cached scan", collect(t, it), x.e)
			_ = it.Close()
		}
		st := c.Stats()
		blocks := props.NumDataBlocks
		if round == 0 && st.Hits != 0 {
			t.Errorf("first scan: %d hits", st.Hits)
		}
		if round == 1 && st.Hits < blocks {
			t.Errorf("second scan: %d hits, want at least %d", st.Hits, blocks)
		}
	}
}
