package master

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// A master elected over a cluster upgraded in place (tablet records of an
// older release, no mirrors under assignments/) mirrors every assigned
// tablet under its server and marks the cluster ready, so that tablet
// servers move over to reading and watching only their own tablets.
func TestLeaderMirrorsTheAssignmentsOfAnUpgradedCluster(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	for i := range 5 {
		rec := meta.TabletRecord{Table: "t", ID: fmt.Sprintf("t%d", i), State: meta.StateAssigned,
			Server: "gone", Address: "127.0.0.1:1", Epoch: 1, Lease: 0x7ab1e}
		if _, err := c.cli.Put(ctx, c.layout.TabletKey(rec.Table, rec.ID), meta.EncodeTablet(rec)); err != nil {
			t.Fatal(err)
		}
	}
	c.waitLeader(c.startMaster(Options{}))
	waitFor(t, 10*time.Second, func() (bool, string) {
		resp, err := c.cli.Get(ctx, c.layout.AssignmentsReadyKey())
		return err == nil && len(resp.Kvs) == 1, fmt.Sprintf("ready key: %v", err)
	})
	// Every record that still names a server (the assignment loop may
	// have released some meanwhile) has its mirror.
	tablets, _, err := meta.ListAllTablets(ctx, c.cli, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	for _, vt := range tablets {
		resp, err := c.cli.Get(ctx, c.layout.AssignmentKey(vt.Server, vt.Table, vt.ID))
		switch {
		case err != nil:
			t.Fatal(err)
		case vt.Server == "" && len(resp.Kvs) != 0, vt.Server != "" && (len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != vt.ModRevision):
			t.Fatalf("tablet %s on %q: mirror %+v", vt.ID, vt.Server, resp.Kvs)
		}
	}
	if resp, err := c.cli.Get(ctx, c.layout.AssignmentsPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count > 5 {
		t.Fatalf("%d mirrors, %v", resp.Count, err)
	}
}
