// Package memstore is the in-memory twin of etcd: a meta.Store with
// revisions, leases with TTLs, watches and compare-and-swap transactions,
// for the subset of etcd that Tabula uses. Tests that do not test etcd
// itself run on it: it starts in microseconds, its leases expire when the
// test moves its clock, and it needs no ports or folders. The same
// conformance suite (meta/metatest) runs on it and on embedded etcd.
//
//	clock := memstore.NewManualClock()
//	s := memstore.New(memstore.Options{Clock: clock})
//	defer s.Close()
//	g, _ := s.Grant(ctx, 10)
//	s.Put(ctx, "servers/s1", "addr", clientv3.WithLease(g.ID))
//	clock.Advance(11 * time.Second) // the lease expires; servers/s1 is deleted
//
// The twin answers etcd's own gRPC client interfaces (pb.KVClient,
// pb.LeaseClient, pb.WatchClient) and hands them to clientv3's
// NewKVFromKVClient, NewLeaseFromLeaseClient and NewWatchFromWatchClient:
// the client code that encodes Ops, translates errors (rpctypes), keeps
// leases alive and multiplexes watches is etcd's, unchanged. Only the
// server side is the twin's: mvcc.go (revisions and history), kv.go
// (Range, Put, DeleteRange), txn.go, lease.go, watch.go.
//
// The subset, from every use in the tree (master, tabletserver, auth,
// verify, meta, the election):
//
//   - Get of a key, a prefix, a range or from a key, with Limit (Count and
//     More as etcd's), Rev (historical reads: the master's index pages a
//     range at one revision), CountOnly, KeysOnly, Serializable (always
//     linearizable here), Sort (WithFirstCreate, WithLastCreate) and the
//     Min/Max Mod/Create revision filters.
//   - Put with Lease, PrevKV, IgnoreValue and IgnoreLease (meta's fences);
//     Delete of a key, a prefix or a range, with PrevKV.
//   - Txn: compares on Value, Version, CreateRevision, ModRevision and
//     Lease with = != < >, over a key or a range; Then/Else of Get, Put
//     and Delete; Succeeded and Responses; a key written twice is refused
//     (rpctypes.ErrDuplicateKey), as by etcd.
//   - Watch of a key, a prefix or a range from a revision (replayed from
//     history), with PrevKV and the put/delete filters; cancelled with its
//     context; RequestProgress.
//   - Leases: Grant (at least 2 s, as a default etcd member), Revoke (the
//     bound keys deleted in one revision), TimeToLive (whole seconds
//     truncated; TTL -1 when gone; WithAttachedKeys), KeepAlive,
//     KeepAliveOnce (rpctypes.ErrLeaseNotFound when gone), Leases;
//     expiry on real time or on a ManualClock (Options.Clock).
//
// Not supported, and refused with an error that says so
// (errors.ErrUnsupported): Compact (history is kept whole, so no read or
// watch is ever ErrCompacted), GetStream, nested transactions, historical
// reads inside a transaction, periodic progress notification. Cluster,
// maintenance and auth APIs are not part of meta.Store.
package memstore
