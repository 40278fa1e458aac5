// Package tabletserver is Tabula's tablet server: it serves the
// TabletServer gRPC service (docs/CONTRACTS.md §5) for the tablets the master
// assigns to it, running one tablet.Tablet engine per loaded tablet.
//
// A Server owns:
//
//   - its registration servers/<id> in etcd, bound to a lease it renews
//     itself; when it cannot renew in time it fences (stops serving and
//     closes every tablet without flushing) before the lease can have
//     expired at etcd, then registers again under a new lease;
//   - the tablets it holds, each at the epoch of its assignment: data calls
//     naming another tablet or epoch get FAILED_PRECONDITION with a
//     tabulapb.NotServing detail, so clients re-locate;
//   - one block cache, one memtable budget and one compaction limiter shared
//     by all of its tablets;
//   - splits: a background loop splits tablets past their table's split
//     threshold, and SplitTablet does it on demand; the split is committed
//     in etcd by one transaction (meta.CommitSplit) and the children are
//     served here at the parent's epoch + 1.
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
