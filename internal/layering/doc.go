// Package layering holds no code, only a test of the rules that keep
// Tabula's layers apart (docs/ARCHITECTURE.md), checked on the packages'
// real dependencies as `go list -deps -json` reports them:
//
//   - the master never imports the tablet server or its engine (anything
//     under tabletserver/): it may read the durable formats (wal, sharedlog,
//     manifest) directly;
//   - the engine (tabletserver/tablet) imports neither gRPC, nor etcd, nor
//     the RPC definitions in api/: it knows nothing of the network or of
//     the coordination store;
//   - the client imports neither the master nor the tablet server;
//   - no package imports etcd's in-memory twin (meta/memstore) or its
//     conformance suite (meta/metatest): they serve tests only;
//   - only meta (and the embedded etcd's bootstrap, internal/embedetcd,
//     and the tests' embedded etcd, internal/testkit/etcdtest) imports
//     etcd's client, its concurrency package or its mvccpb key values:
//     everyone else reaches etcd through meta's typed records and named
//     transactions. This rule is checked file by file (etcd_test.go), so
//     the files still being moved onto meta are named one by one;
//   - no package but a test imports internal/testkit (the helpers tests
//     share) or its sub-packages.
//
// Only what the packages build with counts, not their tests: a master test
// may still open a tablet to make files for its GC.
package layering
