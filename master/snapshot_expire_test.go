package master

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// putSnapshotRecords writes snapshot records and their names' reservations
// straight into etcd, as a master would have.
func putSnapshotRecords(t *testing.T, c *cluster, snaps ...*tabulapb.Snapshot) {
	t.Helper()
	for _, s := range snaps {
		if _, err := c.cli.Put(context.Background(), c.layout.SnapshotKey(s.Id), meta.EncodeSnapshot(s)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.cli.Put(context.Background(), c.layout.SnapshotNameKey(s.Name), s.Id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUpdateSnapshotSetsTheExpireTime: UpdateSnapshot writes a ready
// snapshot's expire time into its record (and 0 clears it), leaving the
// rest of the record as it was; a missing snapshot is NOT_FOUND, one
// still creating UNAVAILABLE, a time before 1970 INVALID_ARGUMENT.
func TestUpdateSnapshotSetsTheExpireTime(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	c.waitLeader(m)
	ctx := context.Background()
	ready := &tabulapb.Snapshot{Name: "ready", Id: "ready.00000001", Table: "t", State: meta.SnapshotReady, CreatedUnixMicros: 5,
		Tablets: []*tabulapb.SnapshotTablet{{TabletId: "t1"}}}
	putSnapshotRecords(t, c, ready, &tabulapb.Snapshot{Name: "creating", Id: "creating.00000002", Table: "t", State: meta.SnapshotCreating})
	sc := tabulapb.NewSnapshotsClient(c.conn(m.Addr()))
	record := func() *tabulapb.Snapshot {
		t.Helper()
		recs, err := meta.ListSnapshotRecords(ctx, c.cli, c.layout)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.GetId() == ready.Id {
				return r.Snapshot
			}
		}
		t.Fatalf("record %s is gone: %v", ready.Id, recs)
		return nil
	}
	for _, expire := range []int64{1_900_000_000_000_000, 0} {
		got, err := sc.UpdateSnapshot(ctx, &tabulapb.UpdateSnapshotRequest{Name: "ready", ExpireUnixMicros: expire})
		if err != nil || got.GetExpireUnixMicros() != expire {
			t.Fatalf("UpdateSnapshot(%d) = %v, %v", expire, got, err)
		}
		r := record()
		if r.GetExpireUnixMicros() != expire || r.GetCreatedUnixMicros() != 5 || len(r.GetTablets()) != 1 || r.GetState() != meta.SnapshotReady {
			t.Fatalf("record after UpdateSnapshot(%d): %v", expire, r)
		}
	}
	for _, tc := range []struct {
		name   string
		expire int64
		code   codes.Code
	}{
		{"nosuch", 1, codes.NotFound},
		{"creating", 1, codes.Unavailable},
		{"ready", -1, codes.InvalidArgument},
	} {
		if _, err := sc.UpdateSnapshot(ctx, &tabulapb.UpdateSnapshotRequest{Name: tc.name, ExpireUnixMicros: tc.expire}); status.Code(err) != tc.code {
			t.Errorf("UpdateSnapshot(%s, %d): %v, want %v", tc.name, tc.expire, err, tc.code)
		}
	}
}

// TestExpiredSnapshotsAreDeleted: the leader's backup-schedule tick,
// under a fake clock, deletes a ready snapshot whose expire time has
// passed (record and name), retires one with clones (as DeleteSnapshot
// does: a clone may name its files), and leaves those not yet expired,
// those without an expire time and one still creating.
func TestExpiredSnapshotsAreDeleted(t *testing.T) {
	c := newCluster(t)
	now := time.Unix(2_000_000_000, 0)
	// The fake clock; the balancer reads it too, on its own goroutine.
	var clock atomic.Int64
	clock.Store(now.UnixMicro())
	m := c.startMaster(Options{BackupScheduleInterval: -1, now: func() time.Time { return time.UnixMicro(clock.Load()) }})
	c.waitLeader(m)
	ctx := context.Background()
	m.mu.Lock()
	term := m.mu.leader
	m.mu.Unlock()
	past, future := now.Add(-time.Second).UnixMicro(), now.Add(time.Hour).UnixMicro()
	snaps := []*tabulapb.Snapshot{
		{Name: "expired", Id: "expired.00000001", Table: "t", State: meta.SnapshotReady, ExpireUnixMicros: past},
		{Name: "cloned", Id: "cloned.00000002", Table: "t", State: meta.SnapshotReady, ExpireUnixMicros: past, Clones: []string{"c"}},
		{Name: "later", Id: "later.00000003", Table: "t", State: meta.SnapshotReady, ExpireUnixMicros: future},
		{Name: "never", Id: "never.00000004", Table: "t", State: meta.SnapshotReady},
		{Name: "creating", Id: "creating.00000005", Table: "t", State: meta.SnapshotCreating, ExpireUnixMicros: past},
	}
	putSnapshotRecords(t, c, snaps...)
	m.backupScheduleTick(ctx, term)
	recs, err := meta.ListSnapshotRecords(ctx, c.cli, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, r := range recs {
		states[r.GetName()] = r.GetState()
	}
	want := map[string]string{"cloned": meta.SnapshotRetired, "later": meta.SnapshotReady, "never": meta.SnapshotReady, "creating": meta.SnapshotCreating}
	if !maps.Equal(states, want) {
		t.Fatalf("records after the sweep: %v, want %v", states, want)
	}
	for name, taken := range map[string]bool{"expired": false, "cloned": false, "later": true} {
		resp, err := c.cli.Get(ctx, c.layout.SnapshotNameKey(name))
		if err != nil || (len(resp.Kvs) == 1) != taken {
			t.Errorf("name %s reserved = %v (%v), want %v", name, len(resp.Kvs) == 1, err, taken)
		}
	}
	// The clock passes "later": the next round deletes it.
	clock.Store(now.Add(2 * time.Hour).UnixMicro())
	if n := m.expireSnapshots(ctx, term); n != 1 {
		t.Errorf("second round deleted %d snapshots, want 1 (later)", n)
	}
}
