// Package meta owns Tabula's etcd key layout (docs/CONTRACTS.md §4) and the records
// stored under it. The master and the tablet servers both read and write
// these keys; this package is the one place that knows their names and value
// encodings.
//
// Keys live under a per-cluster prefix, "/tabula/<cluster>/" by default:
//
//	<prefix>master/election/…         concurrency.Election of the masters
//	<prefix>servers/<id>              ServerRecord, bound to the server's lease
//	<prefix>tables/<name>             TableRecord (the schema, protojson)
//	<prefix>tablets/<table>/<id>      TabletRecord (range, state, owner, epoch)
//
// Values are JSON so that operators can read them with etcdctl.
//
// Use:
//
//	l := meta.NewLayout("default")
//	resp, err := cli.Get(ctx, l.TabletsPrefix("users"), clientv3.WithPrefix())
//	for _, kv := range resp.Kvs {
//		t, err := meta.DecodeTablet(kv.Value)
//		...
//	}
//
// A split replaces a parent tablet with its two children in one etcd
// transaction guarded by the parent key's ModRevision (CommitSplit); every
// assignment bumps a tablet's epoch in a transaction guarded the same way
// (Assign). A split or merge whose answer was lost is settled by a fence
// under the same guards (FenceSplit, FenceMerge), after which it can no
// longer commit. A lease is gone only when etcd answers TimeToLive with
// TTL -1 (LeaseGone): TTL 0 is under a second left.
package meta
