// Package tabletserver is Tabula's tablet server: it serves the
// TabletServer gRPC service (docs/CONTRACTS.md §5) for the tablets the master
// assigns to it, running one tablet.Tablet engine per loaded tablet.
//
// A Server owns:
//
//   - its registration servers/<id> in etcd, bound to a lease it renews
//     itself (lease.go). When it cannot renew in time it PAUSES before the
//     lease can have expired at etcd: data calls get NotServing, loads
//     ErrFenced, and its tablets take no writes, flushes or compactions
//     (the write guard refuses them), but they stay open, memtables and
//     all. A later renewal of the same lease resumes serving them at the
//     same epochs, with no reassignment and no replay. Only when etcd
//     answers that the lease is gone does the server give them up: it
//     closes every tablet without flushing (their next owners replay the
//     logs), then registers under a new lease, releasing what etcd still
//     assigns it under the old one, and owns nothing
//     (docs/OWNERSHIP.md "Pauses, lost leases and etcd outages");
//   - the tablets it holds, each at the epoch of its assignment: data calls
//     naming another tablet or epoch get FAILED_PRECONDITION with a
//     tabulapb.NotServing detail, so clients re-locate;
//   - one block cache, one memtable budget and one compaction limiter shared
//     by all of its tablets;
//   - splits: a background loop splits tablets past their table's split
//     threshold, and SplitTablet does it on demand; the split is committed
//     in etcd by one transaction (meta.CommitSplit) and the children are
//     served here at the parent's epoch + 1;
//   - its goroutines: each runs in one of the server's two groups and ends
//     in Close, which stops them in one written order (lifecycle.go).
//
// It reaches etcd only through package meta's functions.
//
// Use:
//
//	srv, err := tabletserver.Start(ctx, tabletserver.Options{
//		DataDir: "/data/tabula",
//		Etcd:    []string{"127.0.0.1:2379"},
//	})
//	if err != nil { ... }
//	defer srv.Close() // flushes and closes every tablet, then releases the lease
//	fmt.Println("serving at", srv.Addr())
//
// Errors become gRPC status codes in one place (errors.go).
package tabletserver
