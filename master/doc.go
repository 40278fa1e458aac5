// Package master runs Tabula's master (docs/CONTRACTS.md §2, §4): table and family
// administration, tablet assignment and failover, split bookkeeping and
// balancing, and tablet location for clients. It keeps no state of its own:
// etcd holds the schemas and the tablet map (package meta), and a new leader
// rebuilds its view from etcd alone.
//
// Any number of masters run against one etcd; they elect a leader with
// meta.Election (the keys and semantics of etcd's concurrency.Election).
// Every master serves the read-only
// calls (ListTables, DescribeTable, LocateTablet, LocateRange, ListTablets,
// ListServers) straight from etcd; admin writes on a standby fail with
// UNAVAILABLE "master: not the leader (leader is ADDR)".
//
// The leader watches servers/ (tablet servers, each key bound to its
// server's lease) and tablets/. An unassigned tablet, or one whose server's
// key is gone, is given to the live server with the fewest tablets: its epoch
// is bumped in a transaction guarded by the tablet key's ModRevision and the
// leader's election key, then the server is told to LoadTablet (retried with
// backoff; a server that keeps failing loses the tablet to another).
//
// With Options.StorageRoot set, the leader also sweeps the storage root
// every Options.GCInterval for tablet folders that no tablet in etcd names
// and no kept tablet references, older than Options.GCGrace (gc.go).
//
//	m, err := master.Start(ctx, master.Options{Etcd: []string{"127.0.0.1:2379"}})
//	if err != nil { ... }
//	defer m.Close()
//	fmt.Println("master at", m.Addr())
package master
