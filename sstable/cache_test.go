package sstable

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"testing"
)

func TestCacheHitsAndMisses(t *testing.T) {
	c := NewCache(1 << 20)
	if _, ok := getBytes(c, 1, 0); ok {
		t.Fatal("hit in an empty cache")
	}
	a, b := []byte("block-a"), []byte("block-b")
	putBytes(c, 1, 0, a, false)
	putBytes(c, 2, 0, b, false)
	if b, ok := getBytes(c, 1, 0); !ok || string(b) != "block-a" {
		t.Fatalf("get(1, 0) = %q, %v", b, ok)
	}
	if b, ok := getBytes(c, 2, 0); !ok || string(b) != "block-b" {
		t.Fatalf("get(2, 0) = %q, %v: the file id is part of the key", b, ok)
	}
	st := c.Stats()
	// Each block is charged its capacity and the entry's overhead.
	if st.Hits != 2 || st.Misses != 1 || st.Bytes != charge(a)+charge(b) || st.Capacity != 1<<20 {
		t.Fatalf("stats %+v, want %d bytes", st, charge(a)+charge(b))
	}
	r := []byte("replaced")
	putBytes(c, 1, 0, r, false)
	if st := c.Stats(); st.Bytes != charge(r)+charge(b) {
		t.Fatalf("bytes after replacing %d, want %d", st.Bytes, charge(r)+charge(b))
	}
	c.EvictFile(1)
	if _, ok := getBytes(c, 1, 0); ok {
		t.Fatal("EvictFile left the file's block")
	}
	if st := c.Stats(); st.Bytes != charge(b) {
		t.Fatalf("bytes after EvictFile %d, want %d", st.Bytes, charge(b))
	}
}

func TestCacheEvictsLeastRecentlyUsedUnderCapacity(t *testing.T) {
	const capacity, blockLen = 10 << 10, 1 << 10
	c := NewCache(capacity) // one shard: LRU order is exact
	block := func(i int) []byte { return chargedBlock(byte(i), blockLen) }
	for i := 0; i < 10; i++ {
		putBytes(c, 7, uint64(i), block(i), false)
	}
	if _, ok := getBytes(c, 7, 0); !ok { // 0 becomes the most recently used
		t.Fatal("block 0 missing before eviction")
	}
	putBytes(c, 7, 10, block(10), false) // evicts 1, the least recently used
	if _, ok := getBytes(c, 7, 1); ok {
		t.Error("block 1 survived eviction")
	}
	for _, i := range []int{0, 2, 9, 10} {
		if b, ok := getBytes(c, 7, uint64(i)); !ok || !bytes.Equal(b, block(i)) {
			t.Errorf("block %d missing or wrong after eviction", i)
		}
	}
	if st := c.Stats(); st.Bytes > capacity {
		t.Errorf("cache holds %d bytes, capacity %d", st.Bytes, capacity)
	}
	putBytes(c, 7, 99, make([]byte, capacity+1), false) // larger than the cache: not kept
	if _, ok := getBytes(c, 7, 99); ok {
		t.Error("a block larger than the cache was kept")
	}
	if putBytes(NewCache(0), 1, 1, []byte("x"), true); NewCache(0).Stats().Bytes != 0 {
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
				if b, ok := getBytes(c, id, off); ok && (len(b) != len(want)+pad || !bytes.Equal(b[:len(want)], want)) {
					t.Errorf("get(%d, %d) = %q", id, off, b[:min(len(b), 20)])
					return
				}
				putBytes(c, id, off, append(want, make([]byte, pad)...), id == 0)
			}
		}(w)
	}
	wg.Wait()
	st := c.Stats()
	if st.Hits+st.Misses != workers*ops || st.Hits == 0 || st.Bytes > st.Capacity ||
		st.InMemoryBytes == 0 || st.InMemoryBytes > st.Bytes {
		t.Errorf("stats %+v after %d gets", st, workers*ops)
	}
	checkCacheInvariants(t, c)
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

// checkCacheInvariants walks every shard: each list's byte count matches
// its entries, entries sit in the list their flag names, the map holds
// exactly the listed entries and no shard is over capacity.
func checkCacheInvariants(t *testing.T, c *Cache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n := 0
		for _, l := range []*lruList{&s.normal, &s.inMemory} {
			var bytes int64
			for e := l.head.next; e != &l.head; e = e.next {
				if e.next.prev != e {
					t.Errorf("shard %d: broken links", i)
					break
				}
				if e.inMemory != (l == &s.inMemory) || s.items[e.key] != e {
					t.Errorf("shard %d: entry %v in the wrong list or not in the map", i, e.key)
				}
				bytes += charge(e.block.data)
				n++
			}
			if bytes != l.bytes {
				t.Errorf("shard %d: list holds %d bytes, counted %d", i, bytes, l.bytes)
			}
		}
		if n != len(s.items) {
			t.Errorf("shard %d: %d listed entries, %d in the map", i, n, len(s.items))
		}
		if s.normal.bytes+s.inMemory.bytes > s.capacity {
			t.Errorf("shard %d: %d bytes over capacity %d", i, s.normal.bytes+s.inMemory.bytes, s.capacity)
		}
		s.mu.Unlock()
	}
}

// TestCacheInMemoryPriority checks the eviction order on one shard: normal
// blocks go first, in-memory blocks only beyond their 25% share (least
// recently used first among themselves) or when no normal block is left.
func TestCacheInMemoryPriority(t *testing.T) {
	const capacity, blockLen = 10 << 10, 1 << 10 // share: 2.5 blocks
	c := NewCache(capacity)
	block := func(i int) []byte { return chargedBlock(byte(i), blockLen) }
	const hot, cold = 1, 2
	for i := 0; i < 6; i++ {
		putBytes(c, hot, uint64(i), block(i), true)
	}
	if _, ok := getBytes(c, hot, 0); !ok { // 0 becomes the most recently used hot block
		t.Fatal("in-memory block 0 missing before any eviction")
	}
	if st := c.Stats(); st.InMemoryBytes != 6*blockLen || st.Bytes != 6*blockLen {
		t.Fatalf("stats %+v, want 6 in-memory blocks", st)
	}
	// Twenty normal blocks: the first four fill the cache, the next four
	// evict the in-memory blocks over the share (1, 2, 3, 4: least recently
	// used first), the rest evict normal blocks.
	for i := 0; i < 20; i++ {
		putBytes(c, cold, uint64(i), block(i), false)
		checkCacheInvariants(t, c)
	}
	st := c.Stats()
	if st.InMemoryBytes != 2*blockLen || st.Bytes != capacity {
		t.Fatalf("stats %+v, want 2 in-memory blocks in a full cache", st)
	}
	for i, want := range []bool{true, false, false, false, false, true} {
		if b, ok := getBytes(c, hot, uint64(i)); ok != want || (ok && !bytes.Equal(b, block(i))) {
			t.Errorf("in-memory block %d cached %v, want %v", i, ok, want)
		}
	}
	for i := 0; i < 20; i++ {
		if _, ok := getBytes(c, cold, uint64(i)); ok != (i >= 12) {
			t.Errorf("normal block %d cached %v, want %v", i, ok, i >= 12)
		}
	}
	// More normal blocks no longer touch the in-memory ones.
	for i := 20; i < 60; i++ {
		putBytes(c, cold, uint64(i), block(i), false)
	}
	for _, i := range []uint64{0, 5} {
		if _, ok := getBytes(c, hot, i); !ok {
			t.Errorf("in-memory block %d evicted by normal blocks while within its share", i)
		}
	}
	// With no normal block left, in-memory blocks use the whole cache.
	c.EvictFile(cold)
	for i := 10; i < 30; i++ {
		putBytes(c, hot, uint64(i), block(i), true)
	}
	if st := c.Stats(); st.InMemoryBytes != capacity || st.Bytes != capacity {
		t.Errorf("stats %+v, want a cache full of in-memory blocks", st)
	}
	for i := 10; i < 30; i++ {
		if _, ok := getBytes(c, hot, uint64(i)); ok != (i >= 20) {
			t.Errorf("in-memory block %d cached %v, want %v", i, ok, i >= 20)
		}
	}
	checkCacheInvariants(t, c)
}

// TestCacheInMemoryConcurrent mixes in-memory and normal puts, gets,
// EvictFile and Stats from several goroutines; a small in-memory working
// set must stay cached throughout once loaded.
func TestCacheInMemoryConcurrent(t *testing.T) {
	rng := testRand(t)
	c := NewCache(8 << 20) // 2 shards of 4 MiB, 1 MiB in-memory share each
	const hotBlocks, blockLen = 16, 16 << 10
	for i := 0; i < hotBlocks; i++ {
		putBytes(c, 1, uint64(i), bytes.Repeat([]byte{byte(i)}, blockLen), true)
	}
	seeds := make([]int64, 6)
	for i := range seeds {
		seeds[i] = rng.Int63()
	}
	var wg sync.WaitGroup
	for w := range seeds {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(seeds[w]))
			for i := 0; i < 1500; i++ {
				switch x := r.Intn(100); {
				case x < 40: // hot reads: always hits
					off := uint64(r.Intn(hotBlocks))
					if b, ok := getBytes(c, 1, off); !ok || len(b) != blockLen || b[0] != byte(off) {
						t.Errorf("in-memory block %d: cached %v", off, ok)
						return
					}
				case x < 95: // cold scan traffic, far larger than the cache
					id, off := uint64(2+r.Intn(3)), uint64(r.Intn(2000))
					if b, ok := getBytes(c, id, off); ok && (len(b) != blockLen || b[0] != byte(id) || b[1] != byte(off)) {
						t.Errorf("block %d/%d holds wrong bytes", id, off)
						return
					}
					b := make([]byte, blockLen)
					b[0], b[1] = byte(id), byte(off)
					putBytes(c, id, off, b, false)
				case x < 97:
					c.EvictFile(uint64(2 + r.Intn(3)))
				default:
					if st := c.Stats(); st.Bytes > st.Capacity || st.InMemoryBytes < hotBlocks*blockLen {
						t.Errorf("stats %+v", st)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	checkCacheInvariants(t, c)
}

// TestReaderInMemoryFamilySurvivesScans reads every key of a big normal
// table, over and over, through a cache smaller than it (point reads: each
// fills the cache, where one big scan would take only its share): a small
// in-memory table's blocks stay cached, while the same table opened
// without the hint is evicted.
func TestReaderInMemoryFamilySurvivesScans(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	small, big := randomEntries(rng, 60, 100), randomEntries(rng, 3000, 200)
	ps, sprops := writeTable(t, dir, WriterOptions{BlockSize: 1024}, small)
	pb, bprops := writeTable(t, dir, WriterOptions{BlockSize: 1024}, big)
	if sprops.DataSize >= 16<<10 || bprops.DataSize <= 128<<10 {
		t.Fatalf("test tables of %d and %d bytes do not fit the test's premise", sprops.DataSize, bprops.DataSize)
	}
	for _, inMemory := range []bool{true, false} {
		t.Run(fmt.Sprintf("inMemory=%v", inMemory), func(t *testing.T) {
			c := NewCache(64 << 10) // one shard; in-memory share 16 KiB
			rs := openTable(t, ps, ReaderOptions{Cache: c, InMemory: inMemory})
			rb := openTable(t, pb, ReaderOptions{Cache: c})
			scan := func(r *Reader, want []kv) {
				it := r.NewIter(nil, nil)
				sameEntries(t, "scan", collect(t, it), want)
				_ = it.Close()
			}
			scan(rs, small)
			before := c.Stats()
			if inMemory && before.InMemoryBytes == 0 || !inMemory && before.InMemoryBytes != 0 {
				t.Fatalf("stats after loading the small table %+v", before)
			}
			readEach := func(r *Reader, want []kv) {
				for _, e := range want {
					it := r.NewIter(nil, nil)
					if !it.SeekGE(e.key) || !bytes.Equal(it.Key(), e.key) {
						t.Fatalf("point read of %q: %v", e.key, it.Err())
					}
					_ = it.Close()
				}
			}
			for round := 0; round < 3; round++ {
				readEach(rb, big)
				scan(rs, small)
			}
			st := c.Stats()
			smallMisses := st.Misses - before.Misses - 3*bprops.NumDataBlocks
			if st.Misses-before.Misses < 3*bprops.NumDataBlocks {
				t.Fatalf("big table reads missed %d times, want at least %d: the cache is not too small", st.Misses-before.Misses, 3*bprops.NumDataBlocks)
			}
			if inMemory && smallMisses != 0 {
				t.Errorf("in-memory table missed %d times after scans of the big table", smallMisses)
			}
			if !inMemory && smallMisses < sprops.NumDataBlocks {
				t.Errorf("normal small table missed only %d times: the big table's reads should evict it", smallMisses)
			}
			if st.Bytes > st.Capacity || st.InMemoryBytes > st.Bytes {
				t.Errorf("stats %+v", st)
			}
			checkCacheInvariants(t, c)
		})
	}
}

// chargedBlock returns a block of bytes b that the cache charges exactly
// charged bytes (its capacity plus the entry overhead).
func chargedBlock(b byte, charged int) []byte {
	blk := make([]byte, charged-int(cacheEntryOverhead))
	for i := range blk {
		blk[i] = b
	}
	return blk
}

// getBytes is Cache.get for tests that look at bytes only: the reference
// it takes is never given back, so the block is never recycled.
func getBytes(c *Cache, id, offset uint64) ([]byte, bool) {
	b := c.get(id, offset)
	if b == nil {
		return nil, false
	}
	return b.data, true
}

// putBytes is Cache.put of memory of the test's own: the cache holds the
// only reference.
func putBytes(c *Cache, id, offset uint64, block []byte, inMemory bool) {
	b := ownBlockBuf(block)
	c.put(id, offset, b, inMemory)
	b.release()
}

// TestCachePutIntoAFullCacheDoesNotAllocate: a put that evicts a block
// reuses the evicted block's entry (a scan larger than the cache puts
// and evicts a block for every block it reads).
func TestCachePutIntoAFullCacheDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocations")
	}
	const capacity, blockLen = 64 << 10, 1 << 10
	c := NewCache(capacity)
	bufs := make([]*blockBuf, 256)
	for i := range bufs {
		bufs[i] = ownBlockBuf(chargedBlock(byte(i), blockLen))
		bufs[i].ref() // the test's own: never recycled
	}
	off := uint64(0)
	put := func() {
		c.put(1, off, bufs[off%uint64(len(bufs))], false)
		off++
	}
	for range 2 * capacity / blockLen {
		put() // full, and the map at its size
	}
	if n := testing.AllocsPerRun(1000, put); n != 0 {
		t.Fatalf("a put into a full cache allocates %v times", n)
	}
	if st := c.Stats(); st.Bytes > capacity || st.Bytes < capacity-blockLen {
		t.Fatalf("cache holds %d bytes, want about %d", st.Bytes, capacity)
	}
}

// TestBigScanFillsOnlyItsShareOfTheCache scans a table bigger than the
// cache: the scan adds about a quarter of the cache's capacity and stops,
// so a small table read before it stays cached whole. A table the cache
// can hold, bigger than that share, is cached whole by one scan.
func TestBigScanFillsOnlyItsShareOfTheCache(t *testing.T) {
	rng := testRand(t)
	dir := t.TempDir()
	// Sizes with wide margins over the premise below for any seed (the
	// values' lengths and compressibility are random).
	small, medium, big := randomEntries(rng, 60, 100), randomEntries(rng, 800, 200), randomEntries(rng, 8000, 200)
	ps, sprops := writeTable(t, dir, WriterOptions{BlockSize: 1024}, small)
	pm, mprops := writeTable(t, dir, WriterOptions{BlockSize: 1024}, medium)
	pb, bprops := writeTable(t, dir, WriterOptions{BlockSize: 1024}, big)
	const capacity = 256 << 10
	const share = capacity / scanFillShareDiv
	t.Logf("tables of %d, %d and %d bytes", sprops.DataSize, mprops.DataSize, bprops.DataSize)
	if sprops.DataSize >= share || mprops.DataSize <= share || mprops.DataSize+sprops.DataSize >= capacity/2 || bprops.DataSize <= 2*capacity {
		t.Fatalf("test tables of %d, %d and %d bytes do not fit the test's premise", sprops.DataSize, mprops.DataSize, bprops.DataSize)
	}
	c := NewCache(capacity) // one shard
	rs := openTable(t, ps, ReaderOptions{Cache: c})
	rm := openTable(t, pm, ReaderOptions{Cache: c})
	rb := openTable(t, pb, ReaderOptions{Cache: c})
	scan := func(r *Reader, want []kv) {
		it := r.NewIter(nil, nil)
		sameEntries(t, "scan", collect(t, it), want)
		_ = it.Close()
	}
	scan(rs, small)
	smallBytes := c.Stats().Bytes
	for range 3 {
		scan(rb, big)
	}
	st := c.Stats()
	// The share is counted in block bytes, the cache charges a little more
	// per entry: allow one block and the entries' overhead.
	if added, limit := st.Bytes-smallBytes, int64(share)+2<<10+int64(bprops.NumDataBlocks)*cacheEntryOverhead/4; added > limit {
		t.Errorf("scans of a %d-byte table added %d bytes to a %d-byte cache, want at most about a quarter (%d)", bprops.DataSize, added, capacity, limit)
	}
	before := c.Stats()
	scan(rs, small)
	if st := c.Stats(); st.Misses != before.Misses || st.Hits-before.Hits != sprops.NumDataBlocks {
		t.Errorf("the small table, cached before the big scans, missed %d times after them", st.Misses-before.Misses)
	}
	scan(rm, medium)
	before = c.Stats()
	scan(rm, medium)
	if st := c.Stats(); st.Misses != before.Misses || st.Hits-before.Hits != mprops.NumDataBlocks {
		t.Errorf("a %d-byte table (the cache holds %d) missed %d times on its second scan, want it cached whole by the first", mprops.DataSize, capacity, st.Misses-before.Misses)
	}
	checkCacheInvariants(t, c)
}
