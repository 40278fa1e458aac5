package master

import (
	"context"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// TestUnfinishedCreateOfAnEarlierTermIsRemoved: a snapshot record left
// "creating" by an earlier term (its master died between the record and
// ready) is deleted by the next leader, name and all, so its holds are
// dead; a record this term writes is left alone, as a create under way.
func TestUnfinishedCreateOfAnEarlierTermIsRemoved(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	old := &tabulapb.Snapshot{Name: "old", Id: "old.00000001", Table: "t", State: meta.SnapshotCreating}
	if _, err := c.cli.Put(ctx, c.layout.SnapshotKey(old.Id), meta.EncodeSnapshot(old)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cli.Put(ctx, c.layout.SnapshotNameKey(old.Name), old.Id); err != nil {
		t.Fatal(err)
	}
	m := c.startMaster(Options{})
	c.waitLeader(m)
	m.mu.Lock()
	term := m.mu.leader
	m.mu.Unlock()
	mine := &tabulapb.Snapshot{Name: "mine", Id: "mine.00000002", Table: "t", State: meta.SnapshotCreating}
	if _, err := c.cli.Put(ctx, c.layout.SnapshotKey(mine.Id), meta.EncodeSnapshot(mine)); err != nil {
		t.Fatal(err)
	}
	// The term's own run may have gone first; a second run is harmless.
	m.abortCreatingSnapshots(term)
	recs, err := meta.ListSnapshotRecords(ctx, c.cli, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].GetId() != mine.Id {
		t.Fatalf("records after the new term's cleanup: %v", recs)
	}
	if resp, err := c.cli.Get(ctx, c.layout.SnapshotNameKey(old.Name)); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the old create's name is still reserved: %v, %v", resp, err)
	}
}
