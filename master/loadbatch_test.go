package master

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// pendingLoads returns how many loads wait in m's queue for addr.
func pendingLoads(m *Master, addr string) int {
	m.mu.Lock()
	l := m.mu.leader
	m.mu.Unlock()
	if l == nil {
		return 0
	}
	q := l.assign.queues.get(addr)
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

func (f *fakeServer) batches() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.batchSizes...)
}

// loadsOf counts the LoadTablet attempts of tablet id (batched or not).
func (f *fakeServer) loadsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.loads {
		if l.GetTabletId() == id {
			n++
		}
	}
	return n
}

// The loads of one server travel in batches: while its first calls are
// in flight the others queue, and go out in calls of up to maxLoadBatch
// (101 tablets: at most 4 calls, not 101).
func TestLoadsOfOneServerTravelInBatches(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	gate := make(chan struct{})
	s1.mu.Lock()
	s1.batchLoads, s1.loadGate = true, gate
	s1.mu.Unlock()
	c.waitLeader(m)
	const n = 101
	if _, err := c.dial(m.Addr()).CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: splitKeys(n)}); err != nil {
		t.Fatal(err)
	}
	// Every load either at the gate (the first calls) or queued.
	waitFor(t, 30*time.Second, func() (bool, string) {
		started, queued := s1.loadsStarted.Load(), pendingLoads(m, s1.addr)
		return int(started)+queued == n, fmt.Sprintf("%d loads at the server, %d queued", started, queued)
	})
	close(gate)
	waitAllLoaded(t, c, "t", n, s1)
	sizes := s1.batches()
	sum := 0
	for _, s := range sizes {
		sum += s
	}
	// The first two calls, then the 99 or fewer queued behind them in
	// calls of up to 64 (maxLoadBatch).
	if len(sizes) > 4 || sum != n {
		t.Fatalf("%d tablets loaded in LoadTablets calls of %v tablets, want at most 4 calls carrying %d", n, sizes, n)
	}
}

// A tablet that fails in a batch fails alone: the batch's other tablets
// are confirmed loaded (never loaded again), the failed one is retried
// and loads once its server can load it.
func TestATabletThatFailsInABatchFailsAlone(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	keys := splitKeys(5)
	failing := string(keys[1])
	s1.mu.Lock()
	s1.batchLoads, s1.failStart = true, failing
	s1.mu.Unlock()
	c.waitLeader(m)
	if _, err := c.dial(m.Addr()).CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys}); err != nil {
		t.Fatal(err)
	}
	var bad string
	for _, tb := range c.tablets("t") {
		if string(tb.Start) == failing {
			bad = tb.ID
		}
	}
	waitFor(t, 30*time.Second, func() (bool, string) {
		held := s1.holds()
		return len(held) == 4 && s1.loadsOf(bad) >= 2, fmt.Sprintf("%d tablets held, %d attempts of the failing one", len(held), s1.loadsOf(bad))
	})
	for id := range s1.holds() {
		if n := s1.loadsOf(id); n != 1 {
			t.Fatalf("tablet %s of the batch loaded %d times beside a failing tablet, want once", id, n)
		}
	}
	if len(s1.batches()) == 0 {
		t.Fatal("no LoadTablets call: the loads did not travel in batches")
	}
	s1.mu.Lock()
	s1.failStart = ""
	s1.mu.Unlock()
	waitAllLoaded(t, c, "t", 5, s1)
}

// A server that predates LoadTablets (it answers UNIMPLEMENTED) gets one
// LoadTablet per tablet, and its tablets load.
func TestAServerWithoutBatchLoadsGetsLoadTablet(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1") // batchLoads unset
	c.waitLeader(m)
	if _, err := c.dial(m.Addr()).CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: splitKeys(20)}); err != nil {
		t.Fatal(err)
	}
	for _, tb := range waitAllLoaded(t, c, "t", 20, s1) {
		if n := s1.loadsOf(tb.ID); n != 1 {
			t.Fatalf("tablet %s loaded %d times, want once", tb.ID, n)
		}
	}
}
