package master

import (
	"context"
	"testing"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/faultstore"
)

// etcd answers TimeToLive with whole seconds, truncated: TTL 0 is a lease
// with under a second left, whose owner may still serve (its self-fencing
// margin is TTL/4, 0.5 s for the verifier's 2 s). Its tablets are not
// handed on until etcd answers -1 (gone).
func TestPreviousOwnerWithUnderASecondOfLeaseLeftHasNotStopped(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	g, err := c.cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	fs := faultstore.New(c.cli)
	fs.AnswerTTL(g.ID, 0) // 0.x s left
	m := &Master{leases: fs}
	// Its server registered again under another lease (or its key is
	// gone): only the old lease can say whether the old owner stopped.
	snap := &snapshot{servers: map[string]meta.ServerRecord{"s1": {ID: "s1", Lease: int64(g.ID) + 1}}}
	tab := &meta.TabletRecord{Table: "t", ID: "a", State: meta.StateAssigned, Server: "s1", Lease: int64(g.ID), Epoch: 2}
	stopped, err := m.previousOwnerStopped(ctx, snap, tab, map[int64]bool{})
	if err != nil || stopped {
		t.Fatalf("owner under a lease with TTL 0 (under a second left): stopped=%v, %v; want not stopped", stopped, err)
	}
	if err := fs.Expire(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	stopped, err = m.previousOwnerStopped(ctx, snap, tab, map[int64]bool{})
	if err != nil || !stopped {
		t.Fatalf("owner under an expired lease (TTL -1): stopped=%v, %v; want stopped", stopped, err)
	}
}
