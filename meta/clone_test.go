package meta

import (
	"context"
	"errors"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestCloneRetireAndDeleteAreGuardedByTheSnapshotsRevision: a clone's
// transaction fails (writing nothing) once the snapshot's record changed
// since its read, a retirement or delete fails once a clone was committed
// since theirs, and a retired record keeps no name and is dropped only at
// its revision: no clone ever names a snapshot whose holds may be released.
func TestCloneRetireAndDeleteAreGuardedByTheSnapshotsRevision(t *testing.T) {
	cli := newTwin(t)
	ctx := context.Background()
	l := NewLayout("test")
	term := leader(t, cli, l.ElectionPrefix()+"m1")
	src := TableRecord{Schema: &tabulapb.TableSchema{Name: "src"}}
	if err := CreateTable(ctx, cli, l, src, []TabletRecord{{Table: "src", ID: "a1", State: StateUnassigned}}, term); err != nil {
		t.Fatal(err)
	}
	_, tableRev, err := GetTable(ctx, cli, l, "src")
	if err != nil {
		t.Fatal(err)
	}
	snap := &tabulapb.Snapshot{Name: "s", Id: "s.00000001", Table: "src", State: SnapshotReady}
	rev, err := CreateSnapshotRecord(ctx, cli, l, snap, tableRev, term)
	if err != nil {
		t.Fatal(err)
	}
	clone := func(name string, at int64) error {
		s := &tabulapb.Snapshot{Name: snap.Name, Id: snap.Id, Table: "src", State: SnapshotReady, Clones: []string{name}}
		return CloneTable(ctx, cli, l, TableRecord{Schema: &tabulapb.TableSchema{Name: name}},
			[]TabletRecord{{Table: name, ID: name + "1", State: StateUnassigned}}, s, at, term)
	}
	if err := clone("c1", rev); err != nil {
		t.Fatal(err)
	}
	recs, err := ListSnapshotRecords(ctx, cli, l)
	if err != nil || len(recs) != 1 || len(recs[0].GetClones()) != 1 {
		t.Fatalf("the record after a clone: %v, %v", recs, err)
	}
	after := recs[0].ModRevision
	// A clone that read the record before the first one committed.
	if err := clone("c2", rev); !errors.Is(err, ErrConflict) {
		t.Fatalf("a clone at a stale revision: %v, want ErrConflict", err)
	}
	if _, _, err := GetTable(ctx, cli, l, "c2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failed clone wrote its table: %v", err)
	}
	// A delete or a retirement that read the record before the clone.
	if err := DeleteSnapshotRecordAt(ctx, cli, l, snap, rev, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("a delete at a revision before a clone: %v, want ErrConflict", err)
	}
	if err := RetireSnapshotRecord(ctx, cli, l, snap, rev, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("a retirement at a revision before a clone: %v, want ErrConflict", err)
	}
	if err := RetireSnapshotRecord(ctx, cli, l, recs[0].Snapshot, after, term); err != nil {
		t.Fatal(err)
	}
	// Retired: the name is free, no clone passes, the GC sees it retired.
	if resp, err := cli.Get(ctx, l.SnapshotNameKey("s")); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a retired snapshot's name is still reserved: %v, %v", resp, err)
	}
	if err := clone("c3", after); !errors.Is(err, ErrConflict) {
		t.Fatalf("a clone of a retired snapshot: %v, want ErrConflict", err)
	}
	keys, err := ReadGCKeys(ctx, cli, l, term)
	if err != nil {
		t.Fatal(err)
	}
	retiredAt, ok := keys.Retired[snap.Id]
	if !ok || len(keys.SnapshotIDs) != 1 {
		t.Fatalf("the GC's read: retired %v, ids %v", keys.Retired, keys.SnapshotIDs)
	}
	if err := DropRetiredSnapshot(ctx, cli, l, snap.Id, retiredAt-1, term); !errors.Is(err, ErrConflict) {
		t.Fatalf("dropping a retired record at another revision: %v, want ErrConflict", err)
	}
	if err := DropRetiredSnapshot(ctx, cli, l, snap.Id, retiredAt, term); err != nil {
		t.Fatal(err)
	}
	if ids, err := ReadSnapshotIDs(ctx, cli, l); err != nil || len(ids) != 0 {
		t.Fatalf("records after the drop: %v, %v", ids, err)
	}
}
