package meta

import (
	"context"
	"errors"
	"testing"
)

func TestCommitMergeIsGuardedByBothParentsAndTheLease(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	s1 := register(t, cli, l, "s1", "addr1")
	for _, r := range []TabletRecord{
		{Table: "t", ID: "a", End: []byte("m"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 3},
		{Table: "t", ID: "b", Start: []byte("m"), End: []byte("x"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 7},
	} {
		putTablet(t, cli, l, r)
	}
	get := func() (VersionedTablet, VersionedTablet) {
		a, err := GetTablet(ctx, cli, l, "t", "a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := GetTablet(ctx, cli, l, "t", "b")
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	a, b := get()
	merged := TabletRecord{Table: "t", ID: "ab", End: []byte("x"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 8, MergedFrom: []string{"a", "b"}}

	// Refused before etcd is asked: wrong range, low epoch, not adjacent.
	for name, m := range map[string]func(*TabletRecord){
		"range": func(r *TabletRecord) { r.End = []byte("y") },
		"epoch": func(r *TabletRecord) { r.Epoch = 7 },
		"id":    func(r *TabletRecord) { r.ID = "a" },
		"lease": func(r *TabletRecord) { r.Lease = 0 },
	} {
		bad := merged
		m(&bad)
		if err := CommitMerge(ctx, cli, l, a.ModRevision, b.ModRevision, a.TabletRecord, b.TabletRecord, bad); err == nil || errors.Is(err, ErrConflict) {
			t.Fatalf("%s: bad merge accepted or sent to etcd: %v", name, err)
		}
	}
	// A stale revision of either parent loses.
	if err := CommitMerge(ctx, cli, l, a.ModRevision, b.ModRevision-1, a.TabletRecord, b.TabletRecord, merged); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale right: %v", err)
	}
	if _, err := Update(ctx, cli, l, a, a.TabletRecord); err != nil { // the left moves on
		t.Fatal(err)
	}
	if err := CommitMerge(ctx, cli, l, a.ModRevision, b.ModRevision, a.TabletRecord, b.TabletRecord, merged); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale left: %v", err)
	}
	a, b = get()
	if err := CommitMerge(ctx, cli, l, a.ModRevision, b.ModRevision, a.TabletRecord, b.TabletRecord, merged); err != nil {
		t.Fatal(err)
	}
	ts, _, err := GetTablets(ctx, cli, l, "t")
	if err != nil || len(ts) != 1 || ts[0].ID != "ab" || ts[0].Epoch != 8 || len(ts[0].MergedFrom) != 2 {
		t.Fatalf("after the merge: %+v, %v", ts, err)
	}
}
