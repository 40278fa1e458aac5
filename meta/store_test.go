package meta

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta/memstore"
)

// newTwin returns the in-memory twin of etcd for one test: the tests of
// meta's records and transactions do not test etcd itself, and
// meta/metatest runs the same behaviour on etcd and on the twin.
func newTwin(t *testing.T) Store {
	t.Helper()
	s := memstore.New(memstore.Options{Clock: memstore.NewManualClock()})
	t.Cleanup(func() { s.Close() })
	return s
}

func putTablet(t *testing.T, cli Store, l Layout, r TabletRecord) {
	t.Helper()
	if _, err := cli.Put(context.Background(), l.TabletKey(r.Table, r.ID), EncodeTablet(r)); err != nil {
		t.Fatal(err)
	}
}

func TestAssignAndCommitSplitAreGuarded(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "z9", Start: []byte("m"), State: StateUnassigned})
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "a1", End: []byte("m"), State: StateUnassigned})

	ts, _, err := GetTablets(ctx, cli, l, "t")
	if err != nil || len(ts) != 2 || ts[0].ID != "a1" || ts[1].ID != "z9" {
		t.Fatalf("GetTablets = %+v %v; want sorted by start", ts, err)
	}
	parent := ts[1]
	s1, s2 := register(t, cli, l, "s1", "addr1"), register(t, cli, l, "s2", "addr2")
	assigned, err := Assign(ctx, cli, l, parent, s1)
	if err != nil {
		t.Fatal(err)
	}
	if assigned.Epoch != 1 || assigned.State != StateAssigned || assigned.Server != "s1" || assigned.Lease != s1.Lease {
		t.Fatalf("Assign gave %+v", assigned)
	}
	// The stale version loses.
	if _, err := Assign(ctx, cli, l, parent, s2); !errors.Is(err, ErrConflict) {
		t.Fatalf("Assign with a stale revision: %v, want ErrConflict", err)
	}

	left := TabletRecord{Table: "t", ID: NewTabletID(), Start: []byte("m"), End: []byte("q"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 2, Parent: "z9"}
	right := TabletRecord{Table: "t", ID: NewTabletID(), Start: []byte("q"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 2, Parent: "z9"}
	// Bad shapes are refused before touching etcd.
	badRight := right
	badRight.Start = []byte("r")
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, left, badRight); err == nil {
		t.Fatal("CommitSplit accepted children with a gap")
	}
	outside, outsideR := left, right
	outside.End, outsideR.Start = []byte("a"), []byte("a")
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, outside, outsideR); err == nil {
		t.Fatal("CommitSplit accepted a split key outside the parent")
	}
	// A stale parent revision conflicts and changes nothing.
	if err := CommitSplit(ctx, cli, l, parent.ModRevision, assigned.TabletRecord, left, right); !errors.Is(err, ErrConflict) {
		t.Fatalf("CommitSplit with a stale revision: %v", err)
	}
	if ts, _, _ := GetTablets(ctx, cli, l, "t"); len(ts) != 2 {
		t.Fatalf("a failed split changed the map: %+v", ts)
	}
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, left, right); err != nil {
		t.Fatal(err)
	}
	ts, _, err = GetTablets(ctx, cli, l, "t")
	if err != nil || len(ts) != 3 || ts[1].ID != left.ID || ts[2].ID != right.ID {
		t.Fatalf("after split: %+v %v", ts, err)
	}
	if _, err := GetTablet(ctx, cli, l, "t", "z9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("parent still there: %v", err)
	}
	// Committing the same split again conflicts.
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, left, right); !errors.Is(err, ErrConflict) {
		t.Fatalf("second CommitSplit: %v", err)
	}
}

// register puts servers/<id> under a new lease, as a tablet server does.
func register(t *testing.T, cli Store, l Layout, id, addr string) ServerRecord {
	t.Helper()
	g, err := cli.Grant(context.Background(), 60)
	if err != nil {
		t.Fatal(err)
	}
	rec := ServerRecord{ID: id, Address: addr, Lease: int64(g.ID)}
	if _, err := cli.Put(context.Background(), l.ServerKey(id), EncodeServer(rec), clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	return rec
}

// A view of a server taken before it registered again must not assign it
// a tablet (or let it commit a split) under the lease it no longer holds.
func TestAssignAndSplitRequireTheServersCurrentLease(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "p", State: StateUnassigned})
	p, err := GetTablet(ctx, cli, l, "t", "p")
	if err != nil {
		t.Fatal(err)
	}
	stale := register(t, cli, l, "s1", "addr1")
	fresh := register(t, cli, l, "s1", "addr1") // registered again: new lease
	if _, err := Assign(ctx, cli, l, p, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("Assign under a replaced lease: %v, want ErrConflict", err)
	}
	if _, err := Assign(ctx, cli, l, p, ServerRecord{ID: "s1", Address: "addr1"}); err == nil {
		t.Fatal("Assign without a lease succeeded")
	}
	assigned, err := Assign(ctx, cli, l, p, fresh)
	if err != nil {
		t.Fatal(err)
	}
	left := TabletRecord{Table: "t", ID: "l", End: []byte("m"), State: StateAssigned, Server: "s1", Lease: stale.Lease, Epoch: 2, Parent: "p"}
	right := TabletRecord{Table: "t", ID: "r", Start: []byte("m"), State: StateAssigned, Server: "s1", Lease: stale.Lease, Epoch: 2, Parent: "p"}
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, left, right); !errors.Is(err, ErrConflict) {
		t.Fatalf("CommitSplit under a replaced lease: %v, want ErrConflict", err)
	}
	left.Lease, right.Lease = fresh.Lease, fresh.Lease
	if err := CommitSplit(ctx, cli, l, assigned.ModRevision, assigned.TabletRecord, left, right); err != nil {
		t.Fatal(err)
	}
}

func TestGetServersAndTable(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("")
	if _, err := cli.Put(ctx, l.ServerKey("s1"), EncodeServer(ServerRecord{ID: "s1", Address: "a:1"})); err != nil {
		t.Fatal(err)
	}
	ss, err := GetServers(ctx, cli, l)
	if err != nil || len(ss) != 1 || ss[0].Address != "a:1" {
		t.Fatalf("GetServers = %+v %v", ss, err)
	}
	if _, _, err := GetTable(ctx, cli, l, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTable of a missing table: %v", err)
	}
}

// GetTabletAndTable reads the table's record only when its ModRevision is
// not the one the caller knows, and always at the tablet record's
// revision: a schema changed since is read again, a tablet that does not
// exist is answered with ModRevision 0, a table that does not exist with
// ErrNotFound.
func TestGetTabletAndTableReadsTheSchemaOnlyWhenItChanged(t *testing.T) {
	onTwinAndEtcd(t, testGetTabletAndTable)
}

func testGetTabletAndTable(t *testing.T, cli Store) {
	ctx := context.Background()
	l := NewLayout(t.Name())
	if _, err := GetTabletAndTable(ctx, cli, l, "t", "a", 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a table that does not exist: %v, want ErrNotFound", err)
	}
	put := func(s *tabulapb.TableSchema) {
		t.Helper()
		if _, err := cli.Put(ctx, l.TableKey(s.Name), EncodeTable(TableRecord{Schema: s})); err != nil {
			t.Fatal(err)
		}
	}
	put(&tabulapb.TableSchema{Name: "t", Families: []*tabulapb.Family{{Name: "cf"}}})
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "a", Server: "s1", Epoch: 3})

	first, err := GetTabletAndTable(ctx, cli, l, "t", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Changed || len(first.Table.Schema.GetFamilies()) != 1 || first.Tablet.Epoch != 3 || first.Tablet.ModRevision == 0 || first.TableRev == 0 {
		t.Fatalf("first read = %+v, want the tablet at epoch 3 and the schema of one family", first)
	}
	again, err := GetTabletAndTable(ctx, cli, l, "t", "a", first.TableRev)
	if err != nil {
		t.Fatal(err)
	}
	if again.Changed || again.Table.Schema != nil || again.TableRev != first.TableRev || again.Tablet.Epoch != 3 {
		t.Fatalf("read knowing the current schema = %+v, want the tablet and no schema", again)
	}
	missing, err := GetTabletAndTable(ctx, cli, l, "t", "b", first.TableRev)
	if err != nil || missing.Tablet.ModRevision != 0 {
		t.Fatalf("a tablet that does not exist = %+v, %v; want ModRevision 0", missing, err)
	}

	put(&tabulapb.TableSchema{Name: "t", Families: []*tabulapb.Family{{Name: "cf"}, {Name: "new"}}})
	changed, err := GetTabletAndTable(ctx, cli, l, "t", "a", first.TableRev)
	if err != nil {
		t.Fatal(err)
	}
	if !changed.Changed || len(changed.Table.Schema.GetFamilies()) != 2 || changed.TableRev <= first.TableRev {
		t.Fatalf("read after the schema changed = %+v, want the new schema of two families", changed)
	}
}
