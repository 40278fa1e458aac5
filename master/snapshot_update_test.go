package master

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// TestUpdateSnapshotSetsTheExpireTime: UpdateSnapshot writes a ready
// snapshot's expire time into its record (and 0 clears it), leaving the
// rest of the record as it was; a missing snapshot is NOT_FOUND, one
// still creating UNAVAILABLE, a time before 1970 INVALID_ARGUMENT.
func TestUpdateSnapshotSetsTheExpireTime(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	c.waitLeader(m)
	ctx := context.Background()
	put := func(s *tabulapb.Snapshot) {
		t.Helper()
		if _, err := c.cli.Put(ctx, c.layout.SnapshotKey(s.Id), meta.EncodeSnapshot(s)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.cli.Put(ctx, c.layout.SnapshotNameKey(s.Name), s.Id); err != nil {
			t.Fatal(err)
		}
	}
	ready := &tabulapb.Snapshot{Name: "ready", Id: "ready.00000001", Table: "t", State: meta.SnapshotReady, CreatedUnixMicros: 5,
		Tablets: []*tabulapb.SnapshotTablet{{TabletId: "t1"}}}
	put(ready)
	put(&tabulapb.Snapshot{Name: "creating", Id: "creating.00000002", Table: "t", State: meta.SnapshotCreating})
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
