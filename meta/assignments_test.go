package meta

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit/etcdtest"
)

// checkMirrors fails t unless assignments/ holds exactly one mirror per
// assigned tablet record, under its server, with the record's bytes and
// ModRevision.
func checkMirrors(t *testing.T, cli Store, l Layout, step string) {
	t.Helper()
	ctx := context.Background()
	recs, err := cli.Get(ctx, l.AllTabletsPrefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, e := range recs.Kvs {
		rec, err := DecodeTablet(e.Value)
		if err == nil && rec.Server != "" {
			want[l.AssignmentKey(rec.Server, rec.Table, rec.ID)] = fmt.Sprintf("%s@%d", e.Value, e.ModRevision)
		}
	}
	mirrors, err := cli.Get(ctx, l.AssignmentsPrefix(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range mirrors.Kvs {
		got := fmt.Sprintf("%s@%d", e.Value, e.ModRevision)
		if want[string(e.Key)] != got {
			t.Fatalf("%s: mirror %s = %s, want %q", step, e.Key, got, want[string(e.Key)])
		}
		delete(want, string(e.Key))
	}
	if len(want) != 0 {
		t.Fatalf("%s: assigned tablets without a mirror: %v", step, want)
	}
}

// Every writer of a tablet record keeps the mirrors under assignments/ in
// the same transaction: a creation, assignments, a move, a split, a fence,
// a merge, a release and the table's deletion each leave one mirror per
// assigned tablet, with the record's bytes and ModRevision, and none else.
func TestEveryWriterKeepsTheMirrors(t *testing.T) { onTwinAndEtcd(t, testEveryWriterKeepsTheMirrors) }

func testEveryWriterKeepsTheMirrors(t *testing.T, cli Store) {
	ctx := context.Background()
	l := NewLayout("")
	g := leader(t, cli, l.ElectionPrefix()+"m1")
	s1, s2 := register(t, cli, l, "s1", "s1:1"), register(t, cli, l, "s2", "s2:1")
	table := TableRecord{Schema: &tabulapb.TableSchema{Name: "t"}}
	a := TabletRecord{Table: "t", ID: "a", End: []byte("m"), State: StateUnassigned, Fresh: true}
	b := TabletRecord{Table: "t", ID: "b", Start: []byte("m"), State: StateUnassigned, Fresh: true}
	if err := CreateTable(ctx, cli, l, table, []TabletRecord{a, b}, g); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "create")
	va, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "a"), s1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "b"), s1); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "assign")
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "b"), s2); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "move")

	left := TabletRecord{Table: "t", ID: "a1", End: []byte("g"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: va.Epoch + 1, Parent: "a"}
	right := TabletRecord{Table: "t", ID: "a2", Start: []byte("g"), End: []byte("m"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: va.Epoch + 1, Parent: "a"}
	if out, err := FenceSplit(ctx, cli, l, va.ModRevision, va.TabletRecord, left, right); err != nil || out != NotCommitted {
		t.Fatalf("fence: %v %v", out, err)
	}
	checkMirrors(t, cli, l, "fence")
	va = mustTablet(t, cli, l, "a")
	if err := CommitSplit(ctx, cli, l, va.ModRevision, va.TabletRecord, left, right); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "split")
	l1, l2 := mustTablet(t, cli, l, "a1"), mustTablet(t, cli, l, "a2")
	merged := TabletRecord{Table: "t", ID: "m", End: []byte("m"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: l1.Epoch + 1, MergedFrom: []string{"a1", "a2"}}
	if err := CommitMerge(ctx, cli, l, l1.ModRevision, l2.ModRevision, l1.TabletRecord, l2.TabletRecord, merged); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "merge")
	vm := mustTablet(t, cli, l, "m")
	if _, err := Update(ctx, cli, l, vm, Unassigned(vm.TabletRecord)); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "release")
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "m"), s2); err != nil {
		t.Fatal(err)
	}
	_, rev, err := GetTable(ctx, cli, l, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := DeleteTable(ctx, cli, l, "t", rev, g); err != nil {
		t.Fatal(err)
	}
	checkMirrors(t, cli, l, "delete")
	if resp, err := cli.Get(ctx, l.AssignmentsPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("mirrors left after the table's deletion: %+v %v", resp, err)
	}
}

// A table whose tablets are held by more servers than one transaction may
// name loses every mirror: those that do not fit go in the transactions
// that follow.
func TestDeleteTableOfManyServersDeletesEveryMirror(t *testing.T) {
	onTwinAndEtcd(t, testDeleteTableOfManyServersDeletesEveryMirror)
}

func testDeleteTableOfManyServersDeletesEveryMirror(t *testing.T, cli Store) {
	ctx := context.Background()
	l := NewLayout("")
	g := leader(t, cli, l.ElectionPrefix()+"m1")
	var tablets []TabletRecord
	for i := range 2 * maxTxnOps {
		tablets = append(tablets, TabletRecord{Table: "t", ID: fmt.Sprintf("%04d", i), State: StateUnassigned})
	}
	// CreateTable takes at most 127 tablets a transaction; put the
	// schema, then the tablets through Update (unguarded by leases).
	if err := CreateTable(ctx, cli, l, TableRecord{Schema: &tabulapb.TableSchema{Name: "t"}}, nil, g); err != nil {
		t.Fatal(err)
	}
	for i, tr := range tablets {
		putTablet(t, cli, l, tr)
		next := tr
		next.State, next.Server, next.Epoch = StateAssigned, fmt.Sprintf("s%03d", i), 1
		if _, err := Update(ctx, cli, l, mustTablet(t, cli, l, tr.ID), next); err != nil {
			t.Fatal(err)
		}
	}
	checkMirrors(t, cli, l, "assign")
	_, rev, err := GetTable(ctx, cli, l, "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := DeleteTable(ctx, cli, l, "t", rev, g); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, l.AssignmentsPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("mirrors left after the deletion: %d %v", resp.Count, err)
	}
}

// countingKV counts the reads sent through it and the most keys one
// answer held.
type countingKV struct {
	Store
	gets, most int
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.Store.Get(ctx, key, opts...)
	if err == nil {
		c.gets++
		c.most = max(c.most, len(resp.Kvs))
	}
	return resp, err
}

// Once the cluster keeps assignments/, a server reads only its own
// mirrors, page by page: 25 of its 25 tablets in pages of 4 keys, none of
// the other server's, never more than a page in one answer.
func TestReadServerTabletsPagesItsOwnMirrors(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("")
	for i := range 50 {
		server := []string{"s1", "s2"}[i%2]
		cur := TabletRecord{Table: "t", ID: fmt.Sprintf("%02d", i), State: StateUnassigned}
		putTablet(t, cli, l, cur)
		next := cur
		next.State, next.Server, next.Epoch = StateAssigned, server, 1
		if _, err := Update(ctx, cli, l, mustTablet(t, cli, l, cur.ID), next); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx, l.AssignmentsReadyKey(), "1"); err != nil {
		t.Fatal(err)
	}
	kv := &countingKV{Store: cli}
	got, rev, indexed, err := ReadServerTablets(ctx, kv, l, "s1", 4)
	if err != nil || !indexed {
		t.Fatalf("indexed %v, err %v", indexed, err)
	}
	if len(got) != 25 {
		t.Fatalf("read %d tablets, want s1's 25", len(got))
	}
	for _, vt := range got {
		if vt.Server != "s1" || vt.Table != "t" {
			t.Fatalf("read %+v", vt)
		}
		cur := mustTablet(t, cli, l, vt.ID)
		if cur.ModRevision != vt.ModRevision || cur.ModRevision > rev {
			t.Fatalf("tablet %s: mirror's ModRevision %d, record's %d, read at %d", vt.ID, vt.ModRevision, cur.ModRevision, rev)
		}
	}
	// The ready key, then ceil(25/4) = 7 pages.
	if kv.gets != 8 || kv.most > 4 {
		t.Fatalf("%d reads, at most %d keys in one; want 8 reads of at most 4 keys", kv.gets, kv.most)
	}
}

// A server's watch of its own mirrors hears of its own tablets only: a
// move of another server's tablet, or another server's split, is not
// delivered; a move away of its own tablet is, as a deletion.
func TestFollowServerTabletsHearsOnlyItsOwnTablets(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := NewLayout("")
	s1, s2, s3 := register(t, cli, l, "s1", "s1:1"), register(t, cli, l, "s2", "s2:1"), register(t, cli, l, "s3", "s3:1")
	for _, id := range []string{"a", "b", "c"} {
		putTablet(t, cli, l, TabletRecord{Table: "t", ID: id, State: StateUnassigned})
	}
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "a"), s1); err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "b"), s2); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, l.AssignmentsReadyKey(), "1"); err != nil {
		t.Fatal(err)
	}
	_, rev, indexed, err := ReadServerTablets(ctx, cli, l, "s1", 0)
	if err != nil || !indexed {
		t.Fatal(indexed, err)
	}
	// Others' changes: b moves from s2 to s3, c is assigned to s2.
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "b"), s3); err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "c"), s2); err != nil {
		t.Fatal(err)
	}
	// Its own: a moves to s2, then c comes to s1.
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "a"), s2); err != nil {
		t.Fatal(err)
	}
	if _, err := Assign(ctx, cli, l, mustTablet(t, cli, l, "c"), s1); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = FollowServerTablets(ctx, cli, l, "s1", rev+1, true, func(ev TabletEvent) error {
		if ev.Deleted {
			got = append(got, "delete "+ev.ID)
		} else {
			rec, err := ev.Record()
			got = append(got, fmt.Sprintf("put %s on %s at %d (%v)", ev.ID, rec.Server, rec.Epoch, err))
		}
		if len(got) == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("FollowServerTablets ended with %v", err)
	}
	want := []string{"delete a", "put c on s1 at 2 (<nil>)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

// A server following the whole map in a cluster not yet marked ready
// hears when the mark appears (and then reads its own mirrors), and an
// error of fn ends the watch with it.
func TestFollowingTheWholeMapEndsWhenAssignmentsAreReady(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := NewLayout("")
	_, rev, indexed, err := ReadServerTablets(ctx, cli, l, "s1", 0)
	if err != nil || indexed {
		t.Fatal(indexed, err)
	}
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "a", State: StateUnassigned})
	ready, err := cli.Put(ctx, l.AssignmentsReadyKey(), "1")
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	err = FollowServerTablets(ctx, cli, l, "s1", rev+1, false, func(TabletEvent) error { events++; return nil })
	if !errors.Is(err, ErrAssignmentsReady) || events > 1 {
		t.Fatalf("ended with %v after %d events, want ErrAssignmentsReady", err, events)
	}
	stop := errors.New("stop")
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "b", State: StateUnassigned})
	if err := FollowServerTablets(ctx, cli, l, "s1", ready.Header.Revision+1, false, func(TabletEvent) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("ended with %v, want fn's error", err)
	}
}

// A cluster upgraded in place holds assigned records without mirrors, and
// may hold a stale mirror (an older binary moved or split the tablet).
// RepairAssignments mirrors every assigned record, removes the stale
// mirror, marks the cluster ready, and is then a read of one key; under a
// failed guard it writes nothing.
func TestRepairAssignmentsMirrorsAnUpgradedCluster(t *testing.T) {
	onTwinAndEtcd(t, testRepairAssignmentsMirrorsAnUpgradedCluster)
}

func testRepairAssignmentsMirrorsAnUpgradedCluster(t *testing.T, cli Store) {
	ctx := context.Background()
	l := NewLayout("")
	g := leader(t, cli, l.ElectionPrefix()+"m1")
	for i := range 130 {
		rec := TabletRecord{Table: "t", ID: fmt.Sprintf("%03d", i), State: StateAssigned, Server: fmt.Sprintf("s%d", i%3), Epoch: 1, Lease: 7}
		if i%10 == 0 {
			rec = Unassigned(rec)
		}
		putTablet(t, cli, l, rec) // as an older release wrote it: no mirror
	}
	stale := l.AssignmentKey("s9", "t", "001")
	if _, err := cli.Put(ctx, stale, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, l.AssignmentKey("s9", "gone", "x"), "old"); err != nil {
		t.Fatal(err)
	}
	lost := LeaderGuard(l.ElectionPrefix()+"nobody", 1)
	if _, err := RepairAssignments(ctx, cli, l, 7, lost); !errors.Is(err, ErrConflict) {
		t.Fatalf("repair under a lost term: %v, want ErrConflict", err)
	}
	if _, _, indexed, _ := ReadServerTablets(ctx, cli, l, "s1", 0); indexed {
		t.Fatal("the cluster was marked ready under a lost term")
	}
	n, err := RepairAssignments(ctx, cli, l, 7, g)
	if err != nil {
		t.Fatal(err)
	}
	if n != 117+2 {
		t.Fatalf("repaired %d keys, want 117 mirrors and 2 stale ones", n)
	}
	checkMirrors(t, cli, l, "repair")
	got, _, indexed, err := ReadServerTablets(ctx, cli, l, "s1", 5)
	if err != nil || !indexed || len(got) != 39 {
		t.Fatalf("s1 reads %d tablets (indexed %v, %v), want 39 from its mirrors", len(got), indexed, err)
	}
	if n, err := RepairAssignments(ctx, cli, l, 7, g); err != nil || n != 0 {
		t.Fatalf("second repair: %d %v, want nothing to do", n, err)
	}
}

// onTwinAndEtcd runs test on the twin and on an embedded etcd: the
// transactions it checks (range compares and deletions, a read inside an
// Else) are etcd's semantics, which the twin must share.
func onTwinAndEtcd(t *testing.T, test func(*testing.T, Store)) {
	t.Run("twin", func(t *testing.T) { test(t, newTwin(t)) })
	t.Run("etcd", func(t *testing.T) { test(t, etcdtest.Client(t)) })
}

func mustTablet(t *testing.T, cli Store, l Layout, id string) VersionedTablet {
	t.Helper()
	vt, err := GetTablet(context.Background(), cli, l, "t", id)
	if err != nil {
		t.Fatal(err)
	}
	return vt
}
