// Package meta owns Tabula's etcd key layout (docs/CONTRACTS.md §4) and the records
// stored under it. The master and the tablet servers both read and write
// these keys; this package is the one place that knows their names and value
// encodings.
//
// Keys live under a per-cluster prefix, "/tabula/<cluster>/" by default:
//
//	<prefix>master/election/<lease>   the masters' Election (etcd concurrency.Election's keys)
//	<prefix>servers/<id>              ServerRecord, bound to the server's lease
//	<prefix>tables/<name>             TableRecord (the schema, protojson)
//	<prefix>tablets/<table>/<id>      TabletRecord (range, state, owner, epoch)
//	<prefix>balancer                  "on" or "off": the cluster's balancer switch
//	<prefix>auth/tokens/<id>          TokenRecord (auth.go)
//	<prefix>auth/grants/<principal>/<table>  GrantRecord (auth.go)
//
// Values are JSON so that operators can read them with etcdctl.
//
// Every read, write and watch of these keys is a function here, so no
// other package builds an etcd operation or comparison (internal/layering
// checks that nothing else imports etcd's client). The master's writes
// are named transactions guarded by its term (LeaderGuard): CreateTable,
// DeleteTable, PutTable, Assign, Update, SetBalancer; its reads are
// ReadCluster, GetTableAndTablets, ReadGCKeys and the table map
// (ReadTableMap, then a MapWatcher from the next revision).
//
// Use:
//
//	l := meta.NewLayout("default")
//	tablets, rev, err := meta.GetTablets(ctx, cli, l, "users")
//	...
//	next, err := meta.Assign(ctx, cli, l, tablets[0], server, meta.LeaderGuard(key, termRev))
//
// A split replaces a parent tablet with its two children in one etcd
// transaction guarded by the parent key's ModRevision (CommitSplit); every
// assignment bumps a tablet's epoch in a transaction guarded the same way
// (Assign). A split or merge whose answer was lost is settled by a fence
// under the same guards (FenceSplit, FenceMerge), after which it can no
// longer commit. A lease is gone only when etcd answers TimeToLive with
// TTL -1 (LeaseGone): TTL 0 is under a second left.
package meta
