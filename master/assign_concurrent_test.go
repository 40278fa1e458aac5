package master

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// pairingStore holds each assignment transaction (one that puts a mirror
// under assignments/) until another one is in flight beside it, or until
// alone (a bound that only a master assigning one tablet at a time
// reaches), and remembers the most it saw in flight at once.
type pairingStore struct {
	meta.Store
	prefix string
	alone  time.Duration

	mu       sync.Mutex
	cond     *sync.Cond
	inflight int
	most     int
}

func (s *pairingStore) Txn(ctx context.Context) clientv3.Txn {
	return &pairingTxn{Txn: s.Store.Txn(ctx), s: s}
}

// enter waits until a second assignment is in flight or alone has passed.
func (s *pairingStore) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight++
	s.most = max(s.most, s.inflight)
	s.cond.Broadcast()
	timer := time.AfterFunc(s.alone, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	for deadline := time.Now().Add(s.alone); s.most < 2 && time.Now().Before(deadline); {
		s.cond.Wait()
	}
}

func (s *pairingStore) leave() {
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
}

func (s *pairingStore) mostInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.most
}

type pairingTxn struct {
	clientv3.Txn
	s      *pairingStore
	assign bool
}

func (t *pairingTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *pairingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.assign = t.assign || op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), t.s.prefix)
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *pairingTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.assign {
		t.s.enter()
		defer t.s.leave()
	}
	return t.Txn.Commit()
}

// The leader's assignment transactions do not wait for one another: a
// dead server's 10,000 tablets were handed on one etcd round trip after
// another, 29 s at 100,000 tablets (docs/BENCHMARKS.md "The master at
// 100,000 tablets"). Each assignment is held in etcd's client until a
// second one is in flight, which never happens one at a time (each then
// waits 2 s, and the 8 tablets are not loaded in time).
func TestAssignmentsRunConcurrently(t *testing.T) {
	c := newCluster(t)
	ps := &pairingStore{Store: c.cli, prefix: c.layout.AssignmentsPrefix(), alone: 2 * time.Second}
	ps.cond = sync.NewCond(&ps.mu)
	saved := c.cli
	c.cli = ps
	m := c.startMaster(Options{})
	c.cli = saved
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: splitKeys(8)}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 8, s1)
	if n := ps.mostInFlight(); n < 2 {
		t.Fatalf("at most %d assignment transactions in flight at once, want them concurrent", n)
	}
}

// A tablet whose assignment is in flight, or whose index record is older
// than this term's assignment of it, stays counted for the assignment's
// target when it is recounted from that older record (a pass over the
// whole index clears the counts and recounts every record): counted for
// nobody, the target looked emptier than it was and got more than its
// share of a burst of new tablets (TestBurstOfTabletChangesReadsNoMap
// saw 202 and 199 of 401 under load).
func TestInFlightAssignmentStaysCountedForItsTarget(t *testing.T) {
	a := newAssigner(nil, nil)
	snap := &snapshot{servers: map[string]meta.ServerRecord{"s1": {ID: "s1", Lease: 7}, "s2": {ID: "s2", Lease: 8}}}
	const key = "tablets/t/x"
	unassigned := meta.TabletRecord{Table: "t", ID: "x", State: meta.StateUnassigned}
	guess := meta.TabletRecord{Table: "t", ID: "x", State: meta.StateAssigned, Server: "s1", Lease: 7, Epoch: 1}

	a.recount(snap, key, &guess, math.MaxInt64)
	a.beginLoad(key, guess)
	a.recount(snap, key, &unassigned, 10) // the index's record from before
	if a.counts["s1"] != 1 {
		t.Fatalf("in flight, recounted from the older record: s1 counts %d, want 1", a.counts["s1"])
	}
	a.mu.Lock()
	a.loads[key].inflight, a.loads[key].wrote = false, 12
	a.mu.Unlock()
	clear(a.counts)
	clear(a.owner)
	a.recount(snap, key, &unassigned, 10) // a full pass before the feed caught up
	if a.counts["s1"] != 1 {
		t.Fatalf("written at 12, recounted from the record at 10: s1 counts %d, want 1", a.counts["s1"])
	}
	a.recount(snap, key, &guess, 12) // the index has it
	moved := guess
	moved.Server, moved.Lease, moved.Epoch = "s2", 8, 2
	a.recount(snap, key, &moved, 20) // a later change the index reports
	if a.counts["s1"] != 0 || a.counts["s2"] != 1 {
		t.Fatalf("after a newer record: counts %v, want the tablet on s2 alone", a.counts)
	}
}
