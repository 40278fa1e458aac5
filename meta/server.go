package meta

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// A tablet server's own etcd calls (docs/OWNERSHIP.md): the lease it
// renews itself, its registration servers/<id> bound to that lease, and
// (assignments.go) its own tablets, read when it registers and watched so
// that it learns when a tablet of its was handed on. With meta's other
// functions (GetTablet, Update, CommitSplit, FenceSplit, LeaseGone, …)
// they are all the tablet server asks of etcd: package tabletserver
// imports no etcd package.

// ErrLeaseNotFound means etcd does not have the lease any more: it expired
// or was revoked, and whatever was assigned under it may be someone
// else's now. It is the very value etcd's client returns for a renewal of
// a lease etcd does not have, so errors.Is matches both.
var ErrLeaseNotFound = rpctypes.ErrLeaseNotFound

// GrantLease grants a new lease of at least ttl and returns its ID. The
// TTL is rounded up to whole seconds: etcd then keeps the lease at least
// as long as the caller assumes.
func GrantLease(ctx context.Context, leases clientv3.Lease, ttl time.Duration) (int64, error) {
	g, err := leases.Grant(ctx, int64(math.Ceil(ttl.Seconds())))
	if err != nil {
		return 0, err
	}
	return int64(g.ID), nil
}

// RenewLease renews lease id once (KeepAliveOnce); ErrLeaseNotFound when
// etcd answers that the lease is gone. A renewal answers the lease's
// granted TTL, and 0 for a lease etcd does not have (v3rpc/lease.go),
// never a truncated remainder as TimeToLive does: here 0 does mean gone.
func RenewLease(ctx context.Context, leases clientv3.Lease, id int64) error {
	resp, err := leases.KeepAliveOnce(ctx, clientv3.LeaseID(id))
	if err != nil {
		return err
	}
	if resp.TTL <= 0 {
		return ErrLeaseNotFound
	}
	return nil
}

// RevokeLease revokes lease id, deleting the keys bound to it. Lease 0
// (none) is not revoked.
func RevokeLease(ctx context.Context, leases clientv3.Lease, id int64) error {
	if clientv3.LeaseID(id) == clientv3.NoLease {
		return nil
	}
	_, err := leases.Revoke(ctx, clientv3.LeaseID(id))
	return err
}

// RegisterServer puts rec under servers/<rec.ID>, bound to rec.Lease: the
// key is deleted with the lease, so it names only live servers.
func RegisterServer(ctx context.Context, cli clientv3.KV, l Layout, rec ServerRecord) error {
	if rec.Lease == 0 {
		return fmt.Errorf("meta: registering server %s without a lease", rec.ID)
	}
	_, err := cli.Put(ctx, l.ServerKey(rec.ID), EncodeServer(rec), clientv3.WithLease(clientv3.LeaseID(rec.Lease)))
	return err
}

// EtcdErrorCode returns the gRPC code of err if it is (or wraps) one of
// etcd's own server errors, such as "no leader" or "request timed out"
// (codes.Unavailable); false for any other error.
func EtcdErrorCode(err error) (codes.Code, bool) {
	var etcdErr rpctypes.EtcdError
	if !errors.As(err, &etcdErr) {
		return codes.OK, false
	}
	return etcdErr.Code(), true
}
