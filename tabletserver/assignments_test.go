package tabletserver

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// A server is woken only by changes of its own tablets: twenty changes
// of another server's tablet reach that server and not this one, which
// hears of its own tablet's three changes (assigned; Fresh cleared by its
// load; handed on) and nothing else (before assignments/, every server
// heard every change in the cluster).
func TestServerIsWokenOnlyByItsOwnTablets(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.start(nil), e.start(nil)
	c1, c2 := e.dial(s1), e.dial(s2)
	ref := e.load(c1, e.assign("a", nil, []byte("m"), s1, 1))
	e.load(c2, e.assign("b", []byte("m"), nil, s2, 1))
	for i := range 20 {
		rec := e.tablet("b").TabletRecord
		rec.State = []string{meta.StateServing, meta.StateAssigned}[i%2] // same owner, same epoch
		e.putRecord(rec)
	}
	rec := e.tablet("a").TabletRecord
	rec.Server, rec.Address, rec.Lease, rec.Epoch = "elsewhere", "127.0.0.1:1", 42, 2
	e.putRecord(rec)
	// The watch delivers in revision order: once a is dropped, every
	// earlier change was delivered to s1 (or never will be).
	eventually(t, 10*time.Second, "a to stop being served", func() bool {
		return put(e.ctx, c1, ref, "x", set("cf", "q", 1, "v")) != nil
	})
	eventually(t, 10*time.Second, "s2 to hear of b's changes", func() bool { return s2.assignmentEvents.Load() >= 20 })
	if n := s1.assignmentEvents.Load(); n > 3 {
		t.Fatalf("s1 heard of %d changes, want at most 3 (its own tablet's)", n)
	}
}

// pagedStore records the most keys one read of tablets/ or assignments/
// answered, and how many such reads there were.
type pagedStore struct {
	meta.Store
	l meta.Layout
	// mu protects the fields below.
	mu          sync.Mutex
	reads, most int
}

func (p *pagedStore) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := p.Store.Get(ctx, key, opts...)
	if err == nil && len(key) >= len(p.l.AssignmentsPrefix()) && key[:len(p.l.AssignmentsPrefix())] == p.l.AssignmentsPrefix() {
		p.mu.Lock()
		p.reads++
		p.most = max(p.most, len(resp.Kvs))
		p.mu.Unlock()
	}
	return resp, err
}

// A server reads its tablets at start in pages: its id holds seven
// tablets under a lease that is gone, and registering releases every one
// of them through reads of at most two keys each.
func TestRegistrationReadsTheServersTabletsInPages(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"} {
		e.putRecord(meta.TabletRecord{Table: e.schema.Name, ID: id, State: meta.StateAssigned,
			Server: "s1", Address: "127.0.0.1:1", Epoch: 3, Lease: 0x7ab1e})
	}
	ps := &pagedStore{l: e.layout}
	e.start(func(o *Options) {
		o.ID, o.EtcdPageSize = "s1", 2
		o.WrapStore = func(s meta.Store) meta.Store { ps.Store = s; return ps }
	})
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"} {
		if got := e.tablet(id); got.State != meta.StateUnassigned {
			t.Fatalf("tablet %s under a gone lease was not released: %+v", id, got.TabletRecord)
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.most > 2 || ps.reads < 4 {
		t.Fatalf("%d reads of the server's assignments, at most %d keys in one; want pages of at most 2 keys", ps.reads, ps.most)
	}
}

// A cluster upgraded in place: its tablet records were written by an
// older release, without mirrors, and no assignments-ready key exists. Its
// servers follow the whole map, so a hand-on written the old way stops
// its tablet; once the master has mirrored the assignments
// (meta.RepairAssignments) they move to their own mirrors: a tablet held
// from before is handed on through its repaired mirror, and another
// server's changes no longer reach them.
func TestUpgradedClusterIsFollowedWholeUntilMirrored(t *testing.T) {
	e := newEnv(t)
	if _, err := e.cli.Delete(e.ctx, e.layout.AssignmentsReadyKey()); err != nil {
		t.Fatal(err)
	}
	oldPut := func(rec meta.TabletRecord) { // as an older release wrote it
		t.Helper()
		if _, err := e.cli.Put(e.ctx, e.layout.TabletKey(rec.Table, rec.ID), meta.EncodeTablet(rec)); err != nil {
			t.Fatal(err)
		}
	}
	oldAssign := func(id string, start, end []byte, srv *Server) meta.TabletRecord {
		rec := meta.TabletRecord{Table: e.schema.Name, ID: id, Start: start, End: end, State: meta.StateAssigned,
			Server: srv.ID(), Address: srv.Addr(), Epoch: 1, Lease: srv.leaseID.Load(), Fresh: true}
		oldPut(rec)
		return rec
	}
	s1, s2 := e.start(nil), e.start(nil)
	c1, c2 := e.dial(s1), e.dial(s2)
	refA := e.load(c1, oldAssign("a", nil, []byte("g"), s1))
	refD := e.load(c1, oldAssign("d", []byte("g"), []byte("m"), s1))
	e.load(c2, oldAssign("b", []byte("m"), nil, s2))
	if s1.ownAssignments.Load() {
		t.Fatal("s1 follows its own mirrors in a cluster without them")
	}
	handOn := func(rec meta.TabletRecord) meta.TabletRecord {
		rec.Server, rec.Address, rec.Lease, rec.Epoch = "elsewhere", "127.0.0.1:1", 42, rec.Epoch+1
		return rec
	}
	oldPut(handOn(e.tablet("a").TabletRecord))
	eventually(t, 10*time.Second, "a to stop being served", func() bool {
		return put(e.ctx, c1, refA, "a", set("cf", "q", 1, "v")) != nil
	})

	key := e.layout.ElectionPrefix() + "m1"
	resp, err := e.cli.Put(e.ctx, key, "master:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.RepairAssignments(e.ctx, e.cli, e.layout, 2, meta.LeaderGuard(key, resp.Header.Revision)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "s1 to follow its own mirrors", s1.ownAssignments.Load)
	base := s1.assignmentEvents.Load()
	for i := range 10 {
		rec := e.tablet("b").TabletRecord
		rec.State = []string{meta.StateServing, meta.StateAssigned}[i%2]
		e.putRecord(rec)
	}
	if err := put(e.ctx, c1, refD, "h", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("d, held from before the repair, stopped serving: %v", err)
	}
	e.putRecord(handOn(e.tablet("d").TabletRecord))
	eventually(t, 10*time.Second, "d to stop being served", func() bool {
		return put(e.ctx, c1, refD, "i", set("cf", "q", 1, "v")) != nil
	})
	if n := s1.assignmentEvents.Load() - base; n != 1 {
		t.Fatalf("s1 heard of %d changes after the repair, want 1 (d's hand-on)", n)
	}
}
