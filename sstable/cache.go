package sstable

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Cache holds decompressed data blocks of any number of Readers, keyed by
// (CacheID, block offset), bounded in bytes and evicting the least recently
// used block first. A block is charged what it holds in memory: its
// capacity plus the cache's own per-entry memory (cacheEntryOverhead), so
// that the configured capacity is the memory the cache really retains. It is sharded to keep lock
// contention low and is safe for concurrent use.
//
// Blocks of Readers opened with ReaderOptions.InMemory have priority, like
// HBase's IN_MEMORY column families: each shard keeps them in a separate
// LRU list, and eviction takes the least recently used normal block first.
// In-memory blocks are evicted only when no normal block is left or when
// they hold more than their share of the shard, a quarter of its capacity
// (HBase's LruBlockCache gives its in-memory bucket 25% too); then they are
// evicted least recently used first among themselves. So a scan of a big
// normal family cannot push a small in-memory family out of the cache,
// while in-memory families cannot starve the rest of it.
type Cache struct {
	shards   []cacheShard
	capacity int64
	hits     atomic.Uint64
	misses   atomic.Uint64
}

// CacheStats is a snapshot of a Cache's counters.
type CacheStats struct {
	Hits, Misses uint64
	// Bytes is the memory the cached blocks hold, charged as the Cache
	// says (capacity plus per-entry overhead); it stays <= Capacity.
	Bytes, Capacity int64
	// InMemoryBytes is the part of Bytes held by blocks of in-memory
	// Readers.
	InMemoryBytes int64
}

// Each shard holds at least minShardBytes, so that a small cache is not cut
// into shards too small for one block.
const (
	maxCacheShards = 16
	minShardBytes  = 4 << 20
)

// inMemoryShareDiv sets the in-memory share of a shard: capacity/4, the 25%
// of HBase's in-memory bucket.
const inMemoryShareDiv = 4

type cacheKey struct {
	id, offset uint64
}

// cacheEntry is a node of one of a shard's circular LRU lists.
type cacheEntry struct {
	key        cacheKey
	block      *blockBuf // the cache holds one reference
	inMemory   bool      // which list holds it
	prev, next *cacheEntry
}

// cacheEntryOverhead is the memory an entry costs beyond its block: the
// entry itself and its slot in the shard's map (key, pointer and the map's
// control bytes and slack, rounded up).
const cacheEntryOverhead = int64(unsafe.Sizeof(cacheEntry{})) + mapSlotOverhead

// mapSlotOverhead is an estimate of the bytes a map[cacheKey]*cacheEntry
// uses per item: a 24-byte key and value and, at Go's load factor, about a
// quarter of a slot more and a control byte.
const mapSlotOverhead = 32

// charge is what a cached block costs the cache.
func charge(block []byte) int64 { return int64(cap(block)) + cacheEntryOverhead }

// lruList is a circular doubly linked list of entries with their total
// charge.
type lruList struct {
	head  cacheEntry // sentinel: head.next is the most recently used
	bytes int64
}

func (l *lruList) init() { l.head.next, l.head.prev = &l.head, &l.head }

func (l *lruList) empty() bool { return l.head.next == &l.head }

// back returns the least recently used entry; the list must not be empty.
func (l *lruList) back() *cacheEntry { return l.head.prev }

func (l *lruList) pushFront(e *cacheEntry) {
	e.next = l.head.next
	e.prev = &l.head
	l.head.next.prev = e
	l.head.next = e
	l.bytes += charge(e.block.data)
}

func (l *lruList) unlink(e *cacheEntry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
	l.bytes -= charge(e.block.data)
}

type cacheShard struct {
	// mu protects the fields below.
	mu            sync.Mutex
	capacity      int64
	inMemoryShare int64
	items         map[cacheKey]*cacheEntry
	normal        lruList
	inMemory      lruList
	// spare is the entry removed last, which the next put reuses: a scan
	// of a family larger than the cache evicts a block for each block it
	// puts, and allocated an entry for each (one allocation per 4 KiB
	// block read, docs/BENCHMARKS.md "The full scan at 100 B").
	spare *cacheEntry
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
		s.inMemoryShare = s.capacity / inMemoryShareDiv
		s.items = make(map[cacheKey]*cacheEntry)
		s.normal.init()
		s.inMemory.init()
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

// get returns the cached block with a reference for the caller (nil on a
// miss), counting a hit or a miss. A hit makes the block the most
// recently used of its list.
func (c *Cache) get(id, offset uint64) *blockBuf {
	k := cacheKey{id, offset}
	s := c.shard(k)
	var block *blockBuf
	s.mu.Lock()
	e, ok := s.items[k]
	if ok {
		l := s.list(e.inMemory)
		l.unlink(e)
		l.pushFront(e)
		// Under the lock: an eviction cannot release the cache's
		// reference between the lookup and this one. The block is read
		// under it too: once unlocked, the entry may be evicted and
		// reused by another put.
		block = e.block
		block.ref()
	}
	s.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return block
}

// put adds a block, which must not be modified afterwards, to the normal
// or the in-memory list; the cache takes a reference of its own. A block
// whose charge exceeds its shard is not cached.
func (c *Cache) put(id, offset uint64, block *blockBuf, inMemory bool) {
	k := cacheKey{id, offset}
	s := c.shard(k)
	if charge(block.data) > s.capacity {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.items[k]; ok {
		s.removeLocked(old)
	}
	block.ref()
	e := s.spare
	if e != nil {
		s.spare = nil
		*e = cacheEntry{key: k, block: block, inMemory: inMemory}
	} else {
		e = &cacheEntry{key: k, block: block, inMemory: inMemory}
	}
	s.items[k] = e
	s.list(inMemory).pushFront(e)
	for s.normal.bytes+s.inMemory.bytes > s.capacity {
		if s.normal.empty() || s.inMemory.bytes > s.inMemoryShare {
			s.removeLocked(s.inMemory.back())
		} else {
			s.removeLocked(s.normal.back())
		}
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
		st.Bytes += s.normal.bytes + s.inMemory.bytes
		st.InMemoryBytes += s.inMemory.bytes
		s.mu.Unlock()
	}
	return st
}

func (s *cacheShard) list(inMemory bool) *lruList {
	if inMemory {
		return &s.inMemory
	}
	return &s.normal
}

func (s *cacheShard) removeLocked(e *cacheEntry) {
	s.list(e.inMemory).unlink(e)
	delete(s.items, e.key)
	e.block.release()
	// Nothing refers to a removed entry (get hands out its block, never
	// the entry): it can be the next put's.
	*e = cacheEntry{}
	s.spare = e
}
