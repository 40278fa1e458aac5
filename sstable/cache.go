package sstable

import (
	"sync"
	"sync/atomic"
)

// Cache holds decompressed data blocks of any number of Readers, keyed by
// (CacheID, block offset), bounded in bytes (the blocks' lengths) and
// evicting the least recently used block first. It is sharded to keep lock
// contention low and is safe for concurrent use.
type Cache struct {
	shards   []cacheShard
	capacity int64
	hits     atomic.Uint64
	misses   atomic.Uint64
}

// CacheStats is a snapshot of a Cache's counters.
type CacheStats struct {
	Hits, Misses    uint64
	Bytes, Capacity int64
}

// Each shard holds at least minShardBytes, so that a small cache is not cut
// into shards too small for one block.
const (
	maxCacheShards = 16
	minShardBytes  = 4 << 20
)

type cacheKey struct {
	id, offset uint64
}

// cacheEntry is a node of a shard's circular LRU list.
type cacheEntry struct {
	key        cacheKey
	block      []byte
	prev, next *cacheEntry
}

type cacheShard struct {
	// mu protects the fields below.
	mu       sync.Mutex
	capacity int64
	bytes    int64
	items    map[cacheKey]*cacheEntry
	lru      cacheEntry // sentinel: lru.next is the most recently used
}

// NewCache returns a cache of capacityBytes; a capacity <= 0 caches nothing.
func NewCache(capacityBytes int64) *Cache {
	n := int64(1)
	if capacityBytes > 0 {
		n = min(max(capacityBytes/minShardBytes, 1), maxCacheShards)
	}
	c := &Cache{shards: make([]cacheShard, n), capacity: max(capacityBytes, 0)}
	for i := range c.shards {
		s := &c.shards[i]
		s.capacity = c.capacity / n
		if int64(i) < c.capacity%n {
			s.capacity++
		}
		s.items = make(map[cacheKey]*cacheEntry)
		s.lru.next, s.lru.prev = &s.lru, &s.lru
	}
	return c
}

func (c *Cache) shard(k cacheKey) *cacheShard {
	// splitmix64 finalizer over both halves of the key.
	h := k.id*0x9e3779b97f4a7c15 ^ k.offset
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return &c.shards[h%uint64(len(c.shards))]
}

// get returns the cached block, counting a hit or a miss.
func (c *Cache) get(id, offset uint64) ([]byte, bool) {
	k := cacheKey{id, offset}
	s := c.shard(k)
	s.mu.Lock()
	e, ok := s.items[k]
	if ok {
		s.unlinkLocked(e)
		s.pushFrontLocked(e)
	}
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return e.block, true
}

// put adds a block, which must not be modified afterwards. A block larger
// than its shard is not cached.
func (c *Cache) put(id, offset uint64, block []byte) {
	k := cacheKey{id, offset}
	s := c.shard(k)
	size := int64(len(block))
	if size > s.capacity {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.items[k]; ok {
		s.removeLocked(old)
	}
	e := &cacheEntry{key: k, block: block}
	s.items[k] = e
	s.pushFrontLocked(e)
	s.bytes += size
	for s.bytes > s.capacity {
		s.removeLocked(s.lru.prev)
	}
}

// EvictFile drops every block cached under cacheID, for a file that is
// gone for good.
func (c *Cache) EvictFile(cacheID uint64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, e := range s.items {
			if k.id == cacheID {
				s.removeLocked(e)
			}
		}
		s.mu.Unlock()
	}
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	st := CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Capacity: c.capacity}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

func (s *cacheShard) unlinkLocked(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (s *cacheShard) pushFrontLocked(e *cacheEntry) {
	e.next = s.lru.next
	e.prev = &s.lru
	s.lru.next.prev = e
	s.lru.next = e
}

func (s *cacheShard) removeLocked(e *cacheEntry) {
	s.unlinkLocked(e)
	delete(s.items, e.key)
	s.bytes -= int64(len(e.block))
}
