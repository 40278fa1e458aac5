package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Revision returns etcd's current revision, from a cheap linearizable
// read (a count of one key): every write completed before the call is at
// or below it.
func Revision(ctx context.Context, kv clientv3.KV, l Layout) (int64, error) {
	resp, err := kv.Get(ctx, l.TablesPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("meta: reading the revision: %w", err)
	}
	return resp.Header.Revision, nil
}

// Probe is one cheap linearizable read (a count of the election's keys):
// it succeeds only while etcd has a quorum, as every write needs.
func Probe(ctx context.Context, kv clientv3.KV, l Layout) error {
	if _, err := kv.Get(ctx, l.ElectionPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("meta: probing etcd: %w", err)
	}
	return nil
}

// LeaderAddress reads the value of the oldest key of the masters'
// election: the address of the leader. ErrNotFound if none campaigns.
func LeaderAddress(ctx context.Context, kv clientv3.KV, l Layout) (string, error) {
	resp, err := kv.Get(ctx, l.ElectionPrefix(), clientv3.WithFirstCreate()...)
	if err != nil {
		return "", fmt.Errorf("meta: reading the election: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("%w: no master campaigns", ErrNotFound)
	}
	return string(resp.Kvs[0].Value), nil
}
