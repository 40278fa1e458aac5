package master

import (
	"context"
	"fmt"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// One owner per tablet (docs/OWNERSHIP.md). The master hands a tablet at
// epoch E to a new owner (epoch E+1) only when the owner at E is known to
// have stopped serving it:
//
//   - the owner confirmed an unload of epoch E (unloadFrom: the server
//     then refuses epoch E for good, even a load still on its way), or
//   - the etcd lease the tablet was assigned under (TabletRecord.Lease) no
//     longer exists. A tablet server stops serving before its lease can
//     expire at etcd (self-fencing), and one that registers again does so
//     under a new lease and owns nothing of the old one.
//
// A server's name, address or start time never decides: a server that
// restarts under the same id is a new owner, and its old incarnation may
// still be alive (paused) until its lease expires.

// previousOwnerStopped reports whether the owner t names can no longer
// serve it. gone caches this pass's lease lookups.
func (m *Master) previousOwnerStopped(ctx context.Context, snap *snapshot, t *meta.TabletRecord, gone map[int64]bool) (bool, error) {
	if t.Server == "" || t.State == meta.StateUnassigned {
		return true, nil // released by its owner, or never assigned
	}
	if t.Lease == 0 {
		// Assigned before leases were recorded: its server's lease is
		// unknown, so wait until the server is gone (a server that
		// registers again releases such tablets itself).
		_, live := snap.servers[t.Server]
		return !live, nil
	}
	if g, ok := gone[t.Lease]; ok {
		return g, nil
	}
	if srv, ok := snap.servers[t.Server]; ok && srv.Lease == t.Lease {
		gone[t.Lease] = false
		return false, nil
	}
	// TTL 0 is a lease with under a second left, not a gone one.
	g, err := meta.LeaseGone(ctx, m.leases, t.Lease)
	if err != nil {
		return false, err
	}
	gone[t.Lease] = g
	return g, nil
}

// unloadFrom asks t's owner to unload it at t.Epoch. Success is the
// owner's confirmation that it does not and will not serve that epoch.
func (m *Master) unloadFrom(ctx context.Context, t *meta.TabletRecord) error {
	if t.Address == "" {
		return fmt.Errorf("master: tablet %s/%s names no server address to unload from", t.Table, t.ID)
	}
	return m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
		_, err := c.UnloadTablet(ctx, &tabulapb.UnloadTabletRequest{Tablet: ref(t)})
		return err
	})
}
