package meta

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeaseGone reports whether etcd says lease id no longer exists (it expired
// or was revoked): the one answer that lets a tablet assigned under it be
// handed on (docs/OWNERSHIP.md).
//
// etcd answers TimeToLive with the remaining time truncated to whole
// seconds (server/etcdserver/v3_server.go: int64(le.Remaining().Seconds()))
// and with TTL -1 for a lease it does not have (v3rpc/lease.go). So TTL 0
// is a live lease with under a second left, whose owner may still be
// serving: its self-fencing margin (a quarter of the TTL) can be shorter
// than a second. Only a negative TTL means gone.
func LeaseGone(ctx context.Context, leases clientv3.Lease, id int64) (bool, error) {
	resp, err := leases.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return false, err
	}
	return resp.TTL < 0, nil
}
