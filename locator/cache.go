package locator

import (
	"bytes"
	"sort"
	"sync"
)

// cache holds known tablet locations: per table, tablets sorted by start
// key and never overlapping.
type cache struct {
	// mu protects tables.
	mu     sync.RWMutex
	tables map[string][]Tablet
}

func newCache() *cache { return &cache{tables: make(map[string][]Tablet)} }

// findLocked returns the index of the cached tablet of ts containing row,
// or -1.
func findLocked(ts []Tablet, row []byte) int {
	// The last tablet starting at or before row.
	i := sort.Search(len(ts), func(i int) bool { return bytes.Compare(ts[i].Start, row) > 0 }) - 1
	if i >= 0 && ts[i].Contains(row) {
		return i
	}
	return -1
}

// lookup returns the cached tablet of table containing row.
func (c *cache) lookup(table string, row []byte) (Tablet, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ts := c.tables[table]
	if i := findLocked(ts, row); i >= 0 {
		return ts[i], true
	}
	return Tablet{}, false
}

// lookupRange returns the cached tablets covering [start, end) (end empty:
// to the end of the table), consecutive and in order, or false when the
// cache does not cover the whole range.
func (c *cache) lookupRange(table string, start, end []byte) ([]Tablet, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ts := c.tables[table]
	i := findLocked(ts, start)
	if i < 0 {
		return nil, false
	}
	out := []Tablet{ts[i]}
	for {
		last := out[len(out)-1]
		if len(last.End) == 0 || (len(end) != 0 && bytes.Compare(last.End, end) >= 0) {
			return out, true
		}
		i++
		if i >= len(ts) || !bytes.Equal(ts[i].Start, last.End) {
			return nil, false
		}
		out = append(out, ts[i])
	}
}

// insert stores tablets, replacing every cached tablet of the same table
// that overlaps one of them. Unassigned tablets are not stored (there is
// nothing to route to), but they still push out what they overlap.
func (c *cache) insert(tablets ...Tablet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tablets {
		ts := c.tables[t.Table]
		kept := ts[:0:0]
		for _, u := range ts {
			if !u.overlaps(t) {
				kept = append(kept, u)
			}
		}
		if t.Assigned() {
			i := sort.Search(len(kept), func(i int) bool { return bytes.Compare(kept[i].Start, t.Start) > 0 })
			kept = append(kept, Tablet{})
			copy(kept[i+1:], kept[i:])
			kept[i] = t
		}
		if len(kept) == 0 {
			delete(c.tables, t.Table)
		} else {
			c.tables[t.Table] = kept
		}
	}
}

// remove drops the cached tablet of table with the given id, and when
// epoch >= 0 only if it still has that epoch. It reports whether it did.
func (c *cache) remove(table, id string, epoch int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.tables[table]
	for i, t := range ts {
		if t.ID == id && (epoch < 0 || t.Epoch == epoch) {
			c.tables[table] = append(ts[:i:i], ts[i+1:]...)
			return true
		}
	}
	return false
}

// removeRow drops the cached tablet of table containing row.
func (c *cache) removeRow(table string, row []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.tables[table]
	if i := findLocked(ts, row); i >= 0 {
		c.tables[table] = append(ts[:i:i], ts[i+1:]...)
	}
}

// removeTable drops every cached tablet of table.
func (c *cache) removeTable(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tables, table)
}

// len returns the number of cached tablets of table.
func (c *cache) len(table string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.tables[table])
}
