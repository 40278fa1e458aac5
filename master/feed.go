package master

import (
	"sync"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// tabletRef names one tablet of the index.
type tabletRef struct{ table, id string }

// changeFeed is one subscriber's view of what changed in the tablet index
// since it last looked: the tablets whose records were put or deleted, or
// "everything" after a build or a table record's change. Changes merge
// while the subscriber is busy, so a burst of N events costs it at most N
// steps, never N passes over the whole map (docs/ARCHITECTURE.md
// "How many tablets etcd can hold").
type changeFeed struct {
	mu   sync.Mutex
	keys map[tabletRef]struct{}
	full bool
	// wake holds one token while there is something to take.
	wake chan struct{}
}

func newChangeFeed() *changeFeed {
	return &changeFeed{keys: map[tabletRef]struct{}{}, full: true, wake: make(chan struct{}, 1)}
}

// add records that one tablet changed.
func (f *changeFeed) add(r tabletRef) {
	f.mu.Lock()
	if !f.full {
		f.keys[r] = struct{}{}
	}
	f.mu.Unlock()
	f.signal()
}

// markFull records that everything may have changed.
func (f *changeFeed) markFull() {
	f.mu.Lock()
	f.full = true
	clear(f.keys)
	f.mu.Unlock()
	f.signal()
}

func (f *changeFeed) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take returns and forgets what changed: the tablets, or full.
func (f *changeFeed) take() (keys []tabletRef, full bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	full, f.full = f.full, false
	if !full {
		keys = make([]tabletRef, 0, len(f.keys))
		for k := range f.keys {
			keys = append(keys, k)
		}
	}
	clear(f.keys)
	return keys, full
}

// subscribe returns a feed of the index's changes from now on; it starts
// with everything marked changed.
func (x *tabletIndex) subscribe() *changeFeed {
	f := newChangeFeed()
	x.mu.Lock()
	x.feeds = append(x.feeds, f)
	x.mu.Unlock()
	return f
}

// unsubscribe stops feeding f.
func (x *tabletIndex) unsubscribe(f *changeFeed) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i, g := range x.feeds {
		if g == f {
			x.feeds = append(x.feeds[:i], x.feeds[i+1:]...)
			return
		}
	}
}

// tablet returns the record of table/id and its table's schema; t is nil
// if the index does not hold it.
func (x *tabletIndex) tablet(r tabletRef) (t *meta.VersionedTablet, schema *tabulapb.TableSchema) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	schema = x.schemas[r.table]
	if tt := x.tablets[r.table]; tt != nil {
		t = tt.byID[r.id]
	}
	return t, schema
}

// each calls fn on every tablet and its table's schema under the read
// lock (fn must not call the index); ok is false if the index is not
// built.
func (x *tabletIndex) each(fn func(t *meta.VersionedTablet, schema *tabulapb.TableSchema)) (ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.rev == 0 {
		return false
	}
	for name, tt := range x.tablets {
		s := x.schemas[name]
		for _, t := range tt.sorted {
			fn(t, s)
		}
	}
	return true
}
