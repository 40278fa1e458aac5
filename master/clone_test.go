package master

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/meta"
)

// TestCloneCrashLeavesNoTableAndIsSwept: a clone fails between writing its
// tablets' folders and the transaction that names them, first as a master
// dying there, then as one whose term ended there and that commits late
// (refused by the term's guard). Neither leaves a table, a tablet or a
// clone in the snapshot's record; the new leader's GC keeps the folders
// through the grace period, then removes them and the table's folder; the
// snapshot still reads whole, and the new leader's clone succeeds.
func TestCloneCrashLeavesNoTableAndIsSwept(t *testing.T) {
	ctx := context.Background()
	w := newSnapWorld(t, 1)
	w.write()
	w.split()
	w.write()
	id := w.snapshot()
	m1 := w.e.m
	cloneDir := filepath.Join(w.e.root, "tables", "c")
	noClone := func(what string) {
		t.Helper()
		if _, _, err := meta.GetTable(ctx, w.e.c.cli, w.e.c.layout, "c"); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("%s: the table's record: %v, want none", what, err)
		}
		if ts := w.e.c.tablets("c"); len(ts) != 0 {
			t.Fatalf("%s: tablets %v, want none", what, ts)
		}
		recs, err := meta.ListSnapshotRecords(ctx, w.e.c.cli, w.e.c.layout)
		if err != nil || len(recs) != 1 || len(recs[0].GetClones()) != 0 {
			t.Fatalf("%s: snapshot records %v, %v; want one without clones", what, recs, err)
		}
		entries, err := os.ReadDir(cloneDir)
		if err != nil || len(entries) != 2*len(w.tablets) && len(entries) != len(w.tablets) {
			t.Fatalf("%s: the clone's folders %v, %v: the test proves less than it says", what, entries, err)
		}
	}

	// 1. The master dies after the folders, before the transaction.
	m1.testHooks.adoptFault = func(string) error { return errors.New("the master dies here") }
	if _, _, err := m1.cloneSnapshot(ctx, id, "c", auth.Read); err == nil {
		t.Fatal("the clone succeeded past its fault")
	}
	noClone("a master dead before the commit")

	// 2. Its term ends there (a new leader is elected) and it commits late.
	m2 := w.e.c.startMaster(Options{StorageRoot: w.e.root, GCInterval: -1, GCGrace: time.Minute})
	m1.testHooks.adoptFault = func(string) error {
		if err := m1.Close(); err != nil { // resigns: m2 leads
			t.Error(err)
		}
		w.e.c.waitLeader(m2)
		return nil
	}
	if _, _, err := m1.cloneSnapshot(ctx, id, "c", auth.Read); err == nil {
		t.Fatal("a clone committed after its master's term ended")
	}
	noClone("a late commit of an ended term")
	w.e.m = m2

	// The new leader's GC: the folders stay through the grace period (a
	// clone in progress looks the same), then go, the table's folder too.
	w.e.sweep()
	if _, err := os.Stat(cloneDir); err != nil {
		t.Fatalf("a sweep within the grace period removed a clone's folders: %v", err)
	}
	w.sweep()
	if _, err := os.Stat(cloneDir); !os.IsNotExist(err) {
		t.Fatalf("the failed clones' folders outlived the grace period: %v", err)
	}
	w.check(0, "after the sweep")

	// The new leader clones.
	c := w.cloneFrom(id, w.snaps[id], "c")
	c.check(1, "the clone")
	recs, err := meta.ListSnapshotRecords(ctx, w.e.c.cli, w.e.c.layout)
	if err != nil || len(recs) != 1 || len(recs[0].GetClones()) != 1 || recs[0].GetClones()[0] != "c" {
		t.Fatalf("the snapshot's record after the clone: %v, %v", recs, err)
	}
}

// TestCloneOutlivesItsSourceAndSnapshot is Accumulo's clone data loss
// (apache/accumulo#1309: a clone's shared files deleted by the GC) asked of
// Tabula: a clone of a snapshot over split children, then the snapshot
// deleted (it retires), the source compacted, split, merged and deleted
// and the clone split, merged and compacted, with GC sweeps and the
// servers' releases between: the clone reads whole throughout. Once the
// clone names none of the source's files, the retired snapshot goes, and
// with the clone deleted nothing is left.
func TestCloneOutlivesItsSourceAndSnapshot(t *testing.T) {
	w := newSnapWorld(t, 2)
	w.write()
	w.split()
	w.write()
	id := w.snapshot()
	c := w.cloneFrom(id, w.snaps[id], "c")
	compactAll := func(x *snapWorld) func() {
		return func() {
			for _, st := range x.tablets {
				if err := st.tb.Compact(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"delete the snapshot", func() { w.deleteSnapshot(id) }},
		{"sweep", w.sweep},
		{"compact the source", compactAll(w)},
		{"sweep", w.sweep},
		{"split the source", w.split}, {"merge the source", w.merge},
		{"compact the source", compactAll(w)},
		{"sweep", w.sweep},
		{"delete the source", w.deleteTable},
		{"sweep", w.sweep},
		{"split the clone", c.split}, {"write the clone", c.write},
		{"sweep", w.sweep},
		{"merge the clone", c.merge},
		{"sweep", w.sweep},
	}
	for i, s := range steps {
		s.do()
		c.check(i, s.name)
	}
	retired, err := meta.ReadSnapshotIDs(context.Background(), w.e.c.cli, w.e.c.layout)
	if err != nil || len(retired) != 1 {
		t.Fatalf("the retired snapshot is gone while the clone names its files: %v, %v", retired, err)
	}
	compactAll(c)()
	w.sweep()
	w.sweep()
	if ids, err := meta.ReadSnapshotIDs(context.Background(), w.e.c.cli, w.e.c.layout); err != nil || len(ids) != 0 {
		t.Fatalf("the retired snapshot outlived the clone's last reference: %v, %v", ids, err)
	}
	if got := ssts(t, filepath.Join(w.e.root, "tables", w.table)); len(got) != 0 {
		t.Fatalf("the deleted source's files are left: %v", got)
	}
	c.check(len(steps), "compacted")
	c.deleteTable()
	w.sweep()
	if got := ssts(t, filepath.Join(w.e.root, "tables")); len(got) != 0 {
		t.Fatalf("with every table deleted the storage holds %v", got)
	}
}

// TestRestoreFinishesAnUnfinishedRestore: a restore whose master died
// after it began deleting the table (the table left `deleting`, its
// tablets unloaded) is finished by running it again: the delete is
// finished, no safety snapshot is taken of a table being deleted, and the
// table is created again from the snapshot, reading what it holds.
func TestRestoreFinishesAnUnfinishedRestore(t *testing.T) {
	ctx := context.Background()
	w := newSnapWorld(t, 3)
	w.write()
	w.split()
	w.write()
	id := w.snapshot()
	w.write() // after the snapshot: the restore drops it
	// The first restore's master died inside DeleteTable: the table is
	// deleting and its tablets are unloaded.
	schema := &tabulapb.TableSchema{Name: w.table, State: meta.TableDeleting}
	if _, err := w.e.c.cli.Put(ctx, w.e.c.layout.TableKey(w.table), meta.EncodeTable(meta.TableRecord{Schema: schema})); err != nil {
		t.Fatal(err)
	}
	for _, st := range w.tablets {
		if err := st.tb.Close(); err != nil {
			t.Fatal(err)
		}
	}
	w.tablets, w.deleted = nil, true
	resp, err := w.e.m.restoreSnapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetSafetySnapshot() != "" || resp.GetSchema().GetName() != w.table || resp.GetSchema().GetState() != "" {
		t.Fatalf("restore answered %v", resp)
	}
	r := w.cloneWorld(w.table, w.snaps[id].rows)
	r.check(0, "restored")
	recs, err := meta.ListSnapshotRecords(ctx, w.e.c.cli, w.e.c.layout)
	if err != nil || len(recs) != 1 || len(recs[0].GetClones()) != 1 {
		t.Fatalf("the snapshot's record after the restore: %v, %v", recs, err)
	}
}
