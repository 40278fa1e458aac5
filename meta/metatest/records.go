package metatest

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// meta's records and guarded transactions at the store level: what the
// master and the tablet servers build on.
var _ = register(
	testCase{name: "MetaGetTabletsUpdateAndAssign", run: testMetaAssign},
	testCase{name: "MetaCommitAndFenceSplit", run: testMetaSplit},
	testCase{name: "MetaCommitAndFenceMerge", run: testMetaMerge},
)

// registerServer puts servers/<id> under a new lease, as a tablet server
// does.
func registerServer(t *testing.T, h Harness, l meta.Layout, id string) meta.ServerRecord {
	t.Helper()
	lease := grant(t, h, 60)
	rec := meta.ServerRecord{ID: id, Address: id + ":1", Lease: int64(lease)}
	put(t, h, l.ServerKey(id), meta.EncodeServer(rec), clientv3.WithLease(lease))
	return rec
}

func putTablet(t *testing.T, h Harness, l meta.Layout, r meta.TabletRecord) meta.VersionedTablet {
	t.Helper()
	resp := put(t, h, l.TabletKey(r.Table, r.ID), meta.EncodeTablet(r))
	return meta.VersionedTablet{TabletRecord: r, ModRevision: resp.Header.Revision}
}

func testMetaAssign(t *testing.T, h Harness, p string) {
	c := ctx(t)
	l := meta.WithPrefix(p)
	putTablet(t, h, l, meta.TabletRecord{Table: "t", ID: "z", Start: []byte("m"), State: meta.StateUnassigned})
	putTablet(t, h, l, meta.TabletRecord{Table: "t", ID: "a", End: []byte("m"), State: meta.StateUnassigned})
	ts, rev, err := meta.GetTablets(c, h.Store, l, "t")
	if err != nil || len(ts) != 2 || ts[0].ID != "a" || ts[1].ID != "z" || rev < ts[0].ModRevision {
		t.Fatalf("GetTablets = %+v at %d, %v; want sorted by start", ts, rev, err)
	}
	s1 := registerServer(t, h, l, "s1")
	got, err := meta.Assign(c, h.Store, l, ts[1], s1)
	if err != nil || got.Epoch != 1 || got.Server != "s1" || got.Lease != s1.Lease {
		t.Fatalf("Assign: %+v %v", got, err)
	}
	if _, err := meta.Assign(c, h.Store, l, ts[1], s1); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("Assign from a stale read: %v, want ErrConflict", err)
	}
	again := registerServer(t, h, l, "s1") // registered again: a new lease
	if _, err := meta.Assign(c, h.Store, l, got, s1); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("Assign under a replaced lease: %v, want ErrConflict", err)
	}
	if _, err := meta.Assign(c, h.Store, l, got, again); err != nil {
		t.Fatal(err)
	}
	cur, err := meta.GetTablet(c, h.Store, l, "t", "z")
	if err != nil || cur.Epoch != 2 || cur.Lease != again.Lease {
		t.Fatalf("GetTablet after two assignments: %+v %v", cur, err)
	}
	next := meta.Unassigned(cur.TabletRecord)
	up, err := meta.Update(c, h.Store, l, cur, next)
	if err != nil || up.State != meta.StateUnassigned {
		t.Fatalf("Update: %+v %v", up, err)
	}
	if _, err := meta.Update(c, h.Store, l, cur, next); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("Update from a stale read: %v, want ErrConflict", err)
	}
	if _, err := meta.GetTablet(c, h.Store, l, "t", "nope"); !errors.Is(err, meta.ErrNotFound) {
		t.Fatalf("GetTablet of a missing tablet: %v", err)
	}
	if ss, err := meta.GetServers(c, h.Store, l); err != nil || len(ss) != 1 || ss[0].Lease != again.Lease {
		t.Fatalf("GetServers: %+v %v", ss, err)
	}
}

// A split commits once, under the parent's revision and the owner's
// lease; a fence before it makes it impossible, a fence after it reads
// that it committed.
func testMetaSplit(t *testing.T, h Harness, p string) {
	c := ctx(t)
	l := meta.WithPrefix(p)
	s1 := registerServer(t, h, l, "s1")
	split := func(parentID string) (meta.VersionedTablet, meta.TabletRecord, meta.TabletRecord) {
		parent := putTablet(t, h, l, meta.TabletRecord{Table: "t", ID: parentID, State: meta.StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 4})
		child := meta.TabletRecord{Table: "t", State: meta.StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 5, Parent: parentID}
		left, right := child, child
		left.ID, left.End = parentID+"-l", []byte("m")
		right.ID, right.Start = parentID+"-r", []byte("m")
		return parent, left, right
	}

	parent, left, right := split("p1")
	if o, err := meta.FenceSplit(c, h.Store, l, parent.ModRevision, parent.TabletRecord, left, right); err != nil || o != meta.NotCommitted {
		t.Fatalf("fence before the split: %v %v, want not committed", o, err)
	}
	if err := meta.CommitSplit(c, h.Store, l, parent.ModRevision, parent.TabletRecord, left, right); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("a split after its fence: %v, want ErrConflict", err)
	}

	parent, left, right = split("p2")
	if err := meta.CommitSplit(c, h.Store, l, parent.ModRevision, parent.TabletRecord, left, right); err != nil {
		t.Fatal(err)
	}
	if err := meta.CommitSplit(c, h.Store, l, parent.ModRevision, parent.TabletRecord, left, right); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("the same split twice: %v, want ErrConflict", err)
	}
	if o, err := meta.FenceSplit(c, h.Store, l, parent.ModRevision, parent.TabletRecord, left, right); err != nil || o != meta.Committed {
		t.Fatalf("fence after the split: %v %v, want committed", o, err)
	}
	ts, _, err := meta.GetTablets(c, h.Store, l, "t")
	if err != nil || len(ts) != 3 || ts[1].ID != "p2-l" || ts[2].ID != "p2-r" {
		t.Fatalf("tablets after the split: %+v %v", ts, err)
	}
}

// A merge commits once, under both parents' revisions; fences as for a
// split.
func testMetaMerge(t *testing.T, h Harness, p string) {
	c := ctx(t)
	l := meta.WithPrefix(p)
	s1 := registerServer(t, h, l, "s1")
	merge := func(id string) (meta.VersionedTablet, meta.VersionedTablet, meta.TabletRecord) {
		base := meta.TabletRecord{Table: id, State: meta.StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 3}
		left, right, merged := base, base, base
		left.ID, left.End = "l", []byte("m")
		right.ID, right.Start = "r", []byte("m")
		merged.ID, merged.Epoch, merged.MergedFrom = "lr", 4, []string{"l", "r"}
		return putTablet(t, h, l, left), putTablet(t, h, l, right), merged
	}

	left, right, merged := merge("t1")
	if o, err := meta.FenceMerge(c, h.Store, l, left.ModRevision, right.ModRevision, left.TabletRecord, right.TabletRecord, merged); err != nil || o != meta.NotCommitted {
		t.Fatalf("fence before the merge: %v %v, want not committed", o, err)
	}
	if err := meta.CommitMerge(c, h.Store, l, left.ModRevision, right.ModRevision, left.TabletRecord, right.TabletRecord, merged); !errors.Is(err, meta.ErrConflict) {
		t.Fatalf("a merge after its fence: %v, want ErrConflict", err)
	}

	left, right, merged = merge("t2")
	if err := meta.CommitMerge(c, h.Store, l, left.ModRevision, right.ModRevision, left.TabletRecord, right.TabletRecord, merged); err != nil {
		t.Fatal(err)
	}
	if o, err := meta.FenceMerge(c, h.Store, l, left.ModRevision, right.ModRevision, left.TabletRecord, right.TabletRecord, merged); err != nil || o != meta.Committed {
		t.Fatalf("fence after the merge: %v %v, want committed", o, err)
	}
	ts, _, err := meta.GetTablets(c, h.Store, l, "t2")
	if err != nil || len(ts) != 1 || ts[0].ID != "lr" {
		t.Fatalf("tablets after the merge: %+v %v", ts, err)
	}
}
