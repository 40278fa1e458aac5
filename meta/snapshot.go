package meta

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cluster is servers/, tables/ and tablets/ as etcd had them at one
// revision.
type Cluster struct {
	Servers []ServerRecord
	Tables  []TableRecord
	// Tablets of every table, sorted by table, then start key.
	Tablets []VersionedTablet
	// Bad are the records that did not decode, skipped: servers first,
	// then tables, then tablets, each in key order.
	Bad []BadCluster
	Rev int64
}

// BadCluster is a record of ReadCluster that did not decode; Kind is
// "server", "table" or "tablet".
type BadCluster struct {
	Kind string
	BadRecord
}

// ReadCluster reads servers, tables and tablets in one transaction, so at
// one revision. Records that do not decode are skipped into Bad.
func ReadCluster(ctx context.Context, kv clientv3.KV, l Layout) (*Cluster, error) {
	resp, err := kv.Txn(ctx).Then(
		clientv3.OpGet(l.ServersPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(l.TablesPrefix(), clientv3.WithPrefix()),
		clientv3.OpGet(l.AllTabletsPrefix(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("meta: reading the cluster: %w", err)
	}
	c := &Cluster{Rev: resp.Header.Revision}
	bad := func(kind string, key []byte, err error) {
		c.Bad = append(c.Bad, BadCluster{Kind: kind, BadRecord: BadRecord{Key: string(key), Err: err}})
	}
	for _, e := range resp.Responses[0].GetResponseRange().Kvs {
		r, err := DecodeServer(e.Value)
		if err != nil {
			bad("server", e.Key, err)
			continue
		}
		c.Servers = append(c.Servers, r)
	}
	for _, e := range resp.Responses[1].GetResponseRange().Kvs {
		r, err := DecodeTable(e.Value)
		if err != nil {
			bad("table", e.Key, err)
			continue
		}
		c.Tables = append(c.Tables, r)
	}
	for _, e := range resp.Responses[2].GetResponseRange().Kvs {
		r, err := DecodeTablet(e.Value)
		if err != nil {
			bad("tablet", e.Key, err)
			continue
		}
		c.Tablets = append(c.Tablets, VersionedTablet{TabletRecord: r, ModRevision: e.ModRevision})
	}
	sort.Slice(c.Tablets, func(i, j int) bool {
		a, b := c.Tablets[i], c.Tablets[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return bytes.Compare(a.Start, b.Start) < 0
	})
	return c, nil
}

// GCKeys is what the master's file GC reads of etcd, at one revision:
// the keys of tables/ and tablets/ (keys only: a key names its table or
// tablet even when its value does not decode) and the lease of every
// registered server.
type GCKeys struct {
	Rev int64
	// TableKeys and TabletKeys are the keys under tables/ and tablets/,
	// in key order.
	TableKeys, TabletKeys []string
	// ServerLeases are the leases servers/<id> are bound to, in key order.
	ServerLeases []int64
	// SnapshotIDs are the ids of the snapshot records (snapshots/<id>), in
	// key order: the snapshots whose holds are live.
	SnapshotIDs []string
	// Retired maps the id of each retired snapshot record (deleted while
	// it had clones, SnapshotRetired) to its ModRevision: the GC deletes
	// such a record once nothing else names its files.
	Retired map[string]int64
}

// ReadGCKeys reads tables/, tablets/ (keys only), snapshots/ and servers/ in one
// transaction guarded by g (ErrConflict if it fails).
func ReadGCKeys(ctx context.Context, kv clientv3.KV, l Layout, g Guard) (*GCKeys, error) {
	resp, err := kv.Txn(ctx).If(g.cmp).Then(
		clientv3.OpGet(l.TablesPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(l.AllTabletsPrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		// With values: a keys-only read leaves out the lease too.
		clientv3.OpGet(l.ServersPrefix(), clientv3.WithPrefix()),
		// With values: the GC tells the retired records (small) apart.
		clientv3.OpGet(l.SnapshotsPrefix(), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("meta: reading keys for the GC: %w", err)
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: reading keys for the GC: the guard failed", ErrConflict)
	}
	v := &GCKeys{Rev: resp.Header.Revision, Retired: map[string]int64{}}
	for _, e := range resp.Responses[2].GetResponseRange().Kvs {
		v.ServerLeases = append(v.ServerLeases, e.Lease)
	}
	for _, e := range resp.Responses[0].GetResponseRange().Kvs {
		v.TableKeys = append(v.TableKeys, string(e.Key))
	}
	for _, e := range resp.Responses[1].GetResponseRange().Kvs {
		v.TabletKeys = append(v.TabletKeys, string(e.Key))
	}
	for _, e := range resp.Responses[3].GetResponseRange().Kvs {
		id, ok := l.SnapshotFromKey(string(e.Key))
		if !ok {
			return nil, fmt.Errorf("meta: reading keys for the GC: unexpected key %q under snapshots/", e.Key)
		}
		v.SnapshotIDs = append(v.SnapshotIDs, id)
		// A record that does not decode is live: its holds are kept.
		if s, err := DecodeSnapshot(e.Value); err == nil && s.GetState() == SnapshotRetired {
			v.Retired[id] = e.ModRevision
		}
	}
	return v, nil
}
