package meta

import (
	"context"
	"errors"
	"testing"
)

// splitCase is one parent assigned to s1 and the two children a split of
// it at "m" would put.
type splitCase struct {
	cli         Store
	l           Layout
	parent      VersionedTablet
	left, right TabletRecord
	server      ServerRecord
}

func newSplitCase(t *testing.T, cli Store, l Layout, id string) splitCase {
	t.Helper()
	s1 := register(t, cli, l, "s1", "addr1")
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: id, State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 4})
	p, err := GetTablet(context.Background(), cli, l, "t", id)
	if err != nil {
		t.Fatal(err)
	}
	child := TabletRecord{Table: "t", State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 5, Parent: id}
	left, right := child, child
	left.ID, left.End = NewTabletID(), []byte("m")
	right.ID, right.Start = NewTabletID(), []byte("m")
	return splitCase{cli: cli, l: l, parent: p, left: left, right: right, server: s1}
}

func (c splitCase) commit(ctx context.Context) error {
	return CommitSplit(ctx, c.cli, c.l, c.parent.ModRevision, c.parent.TabletRecord, c.left, c.right)
}

func (c splitCase) fence(t *testing.T) Outcome {
	t.Helper()
	o, err := FenceSplit(context.Background(), c.cli, c.l, c.parent.ModRevision, c.parent.TabletRecord, c.left, c.right)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A split whose answer was lost is fenced: if it has not committed, the
// fence makes "not committed" certain (the same transaction arriving late
// conflicts, and the parent is left as it was); if it has, the fence says
// so; if the parent moved on (the master reassigned it), the split cannot
// commit any more either; a fence sent again after its own answer was lost
// reads the same.
func TestFenceSplitMakesALateSplitImpossible(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")

	t.Run("not committed", func(t *testing.T) {
		c := newSplitCase(t, cli, l, "p1")
		if o := c.fence(t); o != NotCommitted {
			t.Fatalf("fence of a split that never arrived: %v", o)
		}
		if o := c.fence(t); o != NotCommitted { // the fence's answer was lost: sent again
			t.Fatalf("second fence: %v", o)
		}
		if err := c.commit(ctx); !errors.Is(err, ErrConflict) {
			t.Fatalf("the split arriving after the fence: %v, want ErrConflict", err)
		}
		p, err := GetTablet(ctx, cli, l, "t", "p1")
		if err != nil || p.Server != "s1" || p.Epoch != 4 || p.Lease != c.server.Lease {
			t.Fatalf("parent after the fence: %+v %v", p, err)
		}
	})
	t.Run("committed", func(t *testing.T) {
		c := newSplitCase(t, cli, l, "p2")
		if err := c.commit(ctx); err != nil {
			t.Fatal(err)
		}
		if o := c.fence(t); o != Committed {
			t.Fatalf("fence of a committed split: %v", o)
		}
	})
	t.Run("parent reassigned", func(t *testing.T) {
		c := newSplitCase(t, cli, l, "p3")
		// The master hands the parent on (its Assign is guarded by the
		// same ModRevision), then the split arrives.
		s2 := register(t, cli, l, "s2", "addr2")
		if _, err := Assign(ctx, cli, l, c.parent, s2); err != nil {
			t.Fatal(err)
		}
		if err := c.commit(ctx); !errors.Is(err, ErrConflict) {
			t.Fatalf("the split arriving after a reassignment: %v, want ErrConflict", err)
		}
		if o := c.fence(t); o != NotCommitted {
			t.Fatalf("fence after a reassignment: %v", o)
		}
	})
	t.Run("committed and gone since", func(t *testing.T) {
		c := newSplitCase(t, cli, l, "p4")
		if err := c.commit(ctx); err != nil {
			t.Fatal(err)
		}
		for _, r := range []TabletRecord{c.left, c.right} {
			if _, err := cli.Delete(ctx, l.TabletKey(r.Table, r.ID)); err != nil {
				t.Fatal(err)
			}
		}
		if o := c.fence(t); o != Unknown {
			t.Fatalf("fence when neither parent nor children exist: %v", o)
		}
	})
}

// The same for a merge: the fence is guarded by both parents' revisions.
func TestFenceMergeMakesALateMergeImpossible(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	s1 := register(t, cli, l, "s1", "addr1")
	setup := func(a, b string) (VersionedTablet, VersionedTablet, TabletRecord) {
		putTablet(t, cli, l, TabletRecord{Table: "t", ID: a, End: []byte("m"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 3})
		putTablet(t, cli, l, TabletRecord{Table: "t", ID: b, Start: []byte("m"), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 7})
		va, err := GetTablet(ctx, cli, l, "t", a)
		if err != nil {
			t.Fatal(err)
		}
		vb, err := GetTablet(ctx, cli, l, "t", b)
		if err != nil {
			t.Fatal(err)
		}
		merged := TabletRecord{Table: "t", ID: NewTabletID(), State: StateAssigned, Server: "s1", Lease: s1.Lease, Epoch: 8, MergedFrom: []string{a, b}}
		return va, vb, merged
	}
	commit := func(a, b VersionedTablet, m TabletRecord) error {
		return CommitMerge(ctx, cli, l, a.ModRevision, b.ModRevision, a.TabletRecord, b.TabletRecord, m)
	}
	fence := func(a, b VersionedTablet, m TabletRecord) Outcome {
		t.Helper()
		o, err := FenceMerge(ctx, cli, l, a.ModRevision, b.ModRevision, a.TabletRecord, b.TabletRecord, m)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	a, b, m := setup("a1", "b1")
	if o := fence(a, b, m); o != NotCommitted {
		t.Fatalf("fence of a merge that never arrived: %v", o)
	}
	if o := fence(a, b, m); o != NotCommitted {
		t.Fatalf("second fence: %v", o)
	}
	if err := commit(a, b, m); !errors.Is(err, ErrConflict) {
		t.Fatalf("the merge arriving after the fence: %v, want ErrConflict", err)
	}

	a, b, m = setup("a2", "b2")
	if err := commit(a, b, m); err != nil {
		t.Fatal(err)
	}
	if o := fence(a, b, m); o != Committed {
		t.Fatalf("fence of a committed merge: %v", o)
	}

	// One parent moved on: the merge cannot commit, and did not.
	a, b, m = setup("a3", "b3")
	if _, err := Update(ctx, cli, l, b, Unassigned(b.TabletRecord)); err != nil {
		t.Fatal(err)
	}
	if o := fence(a, b, m); o != NotCommitted {
		t.Fatalf("fence after the right parent moved on: %v", o)
	}
	if err := commit(a, b, m); !errors.Is(err, ErrConflict) {
		t.Fatalf("the merge arriving after the fence: %v", err)
	}
}
