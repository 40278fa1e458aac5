package master

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// TestFailedCreateLeavesNoRecord: a create whose tablet cannot be held
// (these fake servers do not serve TabletSnapshots) fails, and leaves
// neither its record nor its name behind: the holds it may have taken are
// dead.
func TestFailedCreateLeavesNoRecord(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	ctx := context.Background()
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("g")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	sc := tabulapb.NewSnapshotsClient(c.conn(m.Addr()))
	if _, err := sc.CreateSnapshot(ctx, &tabulapb.CreateSnapshotRequest{Table: "t", Name: "s"}); err == nil {
		t.Fatal("a snapshot whose tablets cannot be held was created")
	}
	recs, err := meta.ListSnapshotRecords(ctx, c.cli, c.layout)
	if err != nil || len(recs) != 0 {
		t.Fatalf("records after a failed create: %v, %v", recs, err)
	}
	if resp, err := c.cli.Get(ctx, c.layout.SnapshotNameKey("s")); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the failed create's name is still reserved: %v, %v", resp, err)
	}
	if _, err := sc.CreateSnapshot(ctx, &tabulapb.CreateSnapshotRequest{Table: "nosuch", Name: "s"}); status.Code(err) != codes.NotFound {
		t.Fatalf("a snapshot of a missing table: %v", err)
	}
	if _, err := sc.CreateSnapshot(ctx, &tabulapb.CreateSnapshotRequest{Table: "t", Name: "../x"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a snapshot named ../x: %v", err)
	}
}
