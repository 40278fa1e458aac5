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
// renews itself, its registration servers/<id> bound to that lease, the
// tablet map it reads when it registers, and the watch on tablets/ that
// tells it when a tablet of its was handed on. With meta's other
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

// ReadAllTablets reads every tablet of every table in one read, with the
// ModRevision of each key, and returns the etcd revision of the read.
// Values that do not decode as tablet records are left out: a tablet
// server reading the map acts only on the records it understands.
func ReadAllTablets(ctx context.Context, cli clientv3.KV, l Layout) ([]VersionedTablet, int64, error) {
	resp, err := cli.Get(ctx, l.AllTabletsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, err
	}
	out := make([]VersionedTablet, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if rec, err := DecodeTablet(kv.Value); err == nil {
			out = append(out, VersionedTablet{TabletRecord: rec, ModRevision: kv.ModRevision})
		}
	}
	return out, resp.Header.Revision, nil
}

// TabletEvent is one change of a key under tablets/: a tablet record put
// or deleted. The record is decoded on demand (Record), so that a watcher
// that holds few of the cluster's tablets decodes only its own.
type TabletEvent struct {
	Table, ID string
	Deleted   bool   // the key is gone
	value     []byte // the record put, unless Deleted
}

// Record decodes the record the event put; an error for a deletion or a
// value that is not a tablet record.
func (e TabletEvent) Record() (TabletRecord, error) {
	if e.Deleted {
		return TabletRecord{}, fmt.Errorf("meta: tablet %s/%s was deleted", e.Table, e.ID)
	}
	return DecodeTablet(e.value)
}

// FollowTablets watches every key under tablets/ from revision rev and
// calls fn for each change of a tablet key, in order, until the watch
// ends: it returns the watch's error, or ctx's once ctx is done. The watch
// requires an etcd leader, so that a member cut off from the cluster ends
// it rather than stay silent. fn runs on the caller's goroutine.
func FollowTablets(ctx context.Context, w clientv3.Watcher, l Layout, rev int64, fn func(TabletEvent)) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range w.Watch(wctx, l.AllTabletsPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			table, id, ok := l.TabletFromKey(string(ev.Kv.Key))
			if !ok {
				continue
			}
			e := TabletEvent{Table: table, ID: id, Deleted: ev.Type != clientv3.EventTypePut}
			if !e.Deleted {
				e.value = ev.Kv.Value
			}
			fn(e)
		}
	}
	return ctx.Err()
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
