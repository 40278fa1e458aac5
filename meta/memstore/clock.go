package memstore

import (
	"sync"
	"time"
)

// ManualClock is a clock that moves only when a test says so: leases of
// the stores that use it expire during Advance, deterministically, and
// their keys' delete events are queued to watchers before Advance returns.
type ManualClock struct {
	// mu protects the fields below. A store calls Now under its own lock,
	// so Advance never holds mu while it calls a store.
	mu     sync.Mutex
	now    time.Time
	stores map[*Store]bool
}

// NewManualClock returns a clock at a fixed instant.
func NewManualClock() *ManualClock {
	return &ManualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), stores: map[*Store]bool{}}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d and expires, in every store that uses
// it, the leases whose TTL ran out.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	stores := make([]*Store, 0, len(c.stores))
	for s := range c.stores {
		stores = append(stores, s)
	}
	c.mu.Unlock()
	for _, s := range stores {
		s.expire()
	}
}

func (c *ManualClock) subscribe(s *Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stores[s] = true
}

func (c *ManualClock) unsubscribe(s *Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.stores, s)
}
