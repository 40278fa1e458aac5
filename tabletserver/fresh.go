package tabletserver

import (
	"context"
	"sync"

	"github.com/tabuladb/tabula/meta"
)

// A load of a fresh tablet records in etcd that the tablet's files exist
// (Fresh false) before it serves it (tablets.go, docs/CONTRACTS.md §4).
// When a dead server's tablets are handed on, a server loads many fresh
// tablets at once, and one etcd transaction each was a good part of what
// a load cost it and etcd (docs/BENCHMARKS.md "A dead server's tablets
// with real servers"). The records are written together instead: a group
// commit, where the load whose turn it is writes every record queued
// while the previous transaction ran, up to meta.MaxUpdateAll in one
// transaction, and hands the turn to the first load queued after them.
// Each record keeps its own guard (its ModRevision): a transaction that
// fails as a whole (one record changed, an etcd error) is written again
// record by record, so each load gets the answer its own meta.Update
// would have given.

// freshWrites is the queue of the records waiting to be written.
type freshWrites struct {
	mu      sync.Mutex
	queue   []*freshWrite
	writing bool // a load is writing (then the queue's first waits for its turn)
}

// freshWrite is one load's record.
type freshWrite struct {
	ctx  context.Context // the load's: its record alone is written under it
	up   meta.TabletUpdate
	wake chan struct{} // closed once written (done) or when it is its turn
	done bool          // set before wake is closed
	err  error         // meta.Update's answer; set before wake is closed
}

// recordFresh writes next over cur as meta.Update would, in one
// transaction with the records other loads wait to write.
func (s *Server) recordFresh(ctx context.Context, cur meta.VersionedTablet, next meta.TabletRecord) error {
	f := &s.fresh
	w := &freshWrite{ctx: ctx, up: meta.TabletUpdate{Cur: cur, Next: next}, wake: make(chan struct{})}
	f.mu.Lock()
	f.queue = append(f.queue, w) // the queue is empty unless a load is writing
	turn := !f.writing
	f.writing = true
	f.mu.Unlock()
	if !turn {
		<-w.wake
		if w.done {
			return w.err
		}
	}
	// Its turn: w is the queue's first.
	f.mu.Lock()
	n := min(len(f.queue), meta.MaxUpdateAll)
	batch := f.queue[:n:n]
	f.queue = f.queue[n:]
	f.mu.Unlock()
	s.writeFresh(ctx, batch)
	f.mu.Lock()
	if len(f.queue) > 0 {
		close(f.queue[0].wake) // its turn
	} else {
		f.writing = false
	}
	f.mu.Unlock()
	return w.err
}

// writeFresh writes batch's records (under ctx when together, each
// under its load's context alone) and answers every load of it but the
// first, which is the caller's.
func (s *Server) writeFresh(ctx context.Context, batch []*freshWrite) {
	together := len(batch) > 1
	if together {
		ups := make([]meta.TabletUpdate, len(batch))
		for i, w := range batch {
			ups[i] = w.up
		}
		_, err := meta.UpdateAll(ctx, s.etcd, s.layout, ups)
		together = err == nil
	}
	for i, w := range batch {
		if !together {
			_, w.err = meta.Update(w.ctx, s.etcd, s.layout, w.up.Cur, w.up.Next)
		}
		w.done = true
		if i > 0 {
			close(w.wake)
		}
	}
}

// queued is how many records wait for their turn (tests).
func (f *freshWrites) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}
