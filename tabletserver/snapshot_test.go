package tabletserver

import (
	"os"
	"slices"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/manifest"
)

// TestParentWithASnapshotHoldIsLeftToTheGC: a merge parent whose folder
// holds a snapshot's hold is not removed by the server once unreferenced
// (it cannot tell whether the snapshot lives; the master's GC can), nor is
// any other parent of a table with holds, since a hold may name its files
// (docs/CONTRACTS.md §4a; TestParentsAChildsHoldNamesAreLeftToTheGC).
func TestParentWithASnapshotHoldIsLeftToTheGC(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	lref, rref, _ := twoTablets(e, c, srv)
	ldir := srv.tabletDir("users", "left")
	st, found, err := manifest.Load(nil, ldir)
	if err != nil || !found {
		t.Fatalf("left manifest: %v", err)
	}
	if err := manifest.SaveHold(nil, ldir, "snap-1", st); err != nil {
		t.Fatal(err)
	}
	resp, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
	if err != nil {
		t.Fatal(err)
	}
	mref := &tabulapb.TabletRef{Table: "users", TabletId: resp.Tablet.TabletId, Epoch: resp.Tablet.Epoch}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: mref, Major: true}); err != nil {
		t.Fatal(err)
	}
	srv.collectParents()
	if _, err := os.Stat(ldir); err != nil {
		t.Fatalf("the held parent's folder was removed: %v", err)
	}
	if _, err := os.Stat(srv.tabletDir("users", "right")); err != nil {
		t.Fatalf("the other parent's folder was removed: %v", err)
	}
	// Left to the GC, not retried by the server for ever.
	srv.mu.Lock()
	n := len(srv.parents)
	srv.mu.Unlock()
	if n != 0 {
		t.Fatalf("the server still tracks %d parents", n)
	}
}

// TestDeletedSnapshotsHoldsAreReleased: the split loop's round releases the
// holds whose snapshot record is gone, and keeps the others.
func TestDeletedSnapshotsHoldsAreReleased(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	twoTablets(e, c, srv)
	for _, id := range []string{"gone", "kept"} {
		if _, err := e.cli.Put(e.ctx, e.layout.SnapshotKey(id), "{}"); err != nil {
			t.Fatal(err)
		}
	}
	hs := srv.heldTablets("users")
	if len(hs) != 2 {
		t.Fatalf("%d tablets held", len(hs))
	}
	for _, h := range hs {
		for _, id := range []string{"gone", "kept"} {
			if _, err := h.t.Snapshot(e.ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv.releaseDeadHolds(e.ctx)
	for _, h := range hs {
		if ids, err := manifest.ListHolds(nil, h.dir); err != nil || !slices.Equal(ids, []string{"gone", "kept"}) {
			t.Fatalf("holds of %s with both records: %v, %v", h.id, ids, err)
		}
	}
	if _, err := e.cli.Delete(e.ctx, e.layout.SnapshotKey("gone")); err != nil {
		t.Fatal(err)
	}
	srv.releaseDeadHolds(e.ctx)
	for _, h := range hs {
		if ids, err := manifest.ListHolds(nil, h.dir); err != nil || !slices.Equal(ids, []string{"kept"}) {
			t.Fatalf("holds of %s once one record went: %v, %v", h.id, ids, err)
		}
		if got := h.t.Snapshots(); !slices.Equal(got, []string{"kept"}) {
			t.Fatalf("engine holds of %s: %v", h.id, got)
		}
	}
}

// TestParentsAChildsHoldNamesAreLeftToTheGC: a merged tablet's hold names
// its parents' files; once its compaction has rewritten them, its manifest
// no longer does, but the server still leaves the parents' folders to the
// master's GC (which reads the hold), never removing them itself.
func TestParentsAChildsHoldNamesAreLeftToTheGC(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	lref, rref, _ := twoTablets(e, c, srv)
	resp, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.heldTablets("users")
	if len(hs) != 1 {
		t.Fatalf("%d tablets held", len(hs))
	}
	if _, err := e.cli.Put(e.ctx, e.layout.SnapshotKey("s"), "{}"); err != nil {
		t.Fatal(err)
	}
	if _, err := hs[0].t.Snapshot(e.ctx, "s"); err != nil {
		t.Fatal(err)
	}
	mref := &tabulapb.TabletRef{Table: "users", TabletId: resp.Tablet.TabletId, Epoch: resp.Tablet.Epoch}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: mref, Major: true}); err != nil {
		t.Fatal(err)
	}
	srv.collectParents()
	for _, id := range []string{"left", "right"} {
		if _, err := os.Stat(srv.tabletDir("users", id)); err != nil {
			t.Fatalf("parent %s, whose files the merged tablet's hold names, was removed: %v", id, err)
		}
	}
}
