package meta

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Snapshots (docs/CONTRACTS.md §4a): snapshots/<id> is a snapshot's
// record. Its holds on storage (manifest.SaveHold) are live while the
// record exists: the master's GC keeps the folders they need, and a
// tablet's owner releases the holds of ids without a record.

// SnapshotsPrefix returns the prefix of every snapshot record.
func (l Layout) SnapshotsPrefix() string { return l.root() + "snapshots/" }

// SnapshotKey returns the key of snapshot id's record.
func (l Layout) SnapshotKey(id string) string { return l.SnapshotsPrefix() + id }

// SnapshotFromKey returns the snapshot id of a key under SnapshotsPrefix.
func (l Layout) SnapshotFromKey(key string) (id string, ok bool) {
	id, ok = strings.CutPrefix(key, l.SnapshotsPrefix())
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// ReadSnapshotIDs returns the ids of every snapshot record (keys only), in
// key order.
func ReadSnapshotIDs(ctx context.Context, kv clientv3.KV, l Layout) ([]string, error) {
	resp, err := kv.Get(ctx, l.SnapshotsPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("meta: reading the snapshot records: %w", err)
	}
	ids := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if id, ok := l.SnapshotFromKey(string(kv.Key)); ok {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
