// Package testkit holds the helpers that tests of two or more packages
// share, so that each package's tests keep only their own scaffolding:
//
//   - WantCode, here: the assertion that an error is a gRPC status with a
//     given code and message;
//   - rpctest: a gRPC server on a loopback port for one test, and probes
//     of the standard gRPC health service;
//   - fakemaster: an in-memory master serving tablet lookups over gRPC,
//     with a lookup counter, a gate, a standby mode and scripted answers,
//     for the tests of the locator and of the client;
//   - etcdtest: an embedded etcd (and a client of it) for one test, for
//     the tests of meta, the master and auth;
//   - writers: a test's background load, n goroutines that write until
//     told to stop and keep what each had acknowledged, for the gateway's,
//     the tablet server's and e2e's tests of writes under splits, merges,
//     drops and kills;
//   - shuffle: every integer of [0, n) once in a seeded random order, in
//     constant memory, for the benchmarks that insert keys in random order
//     (tabletserver/tablet's memory measurement and bench/enginebench, the
//     benchmark harness in its own module, which imports it too).
//
// What belongs here: a helper used by the tests of at least two packages.
// A helper only one package's tests use stays in that package's _test.go
// files. Nothing but tests (and the benchmark harness in bench/, for
// shuffle) imports testkit or its sub-packages (the
// layering test in internal/layering holds production code to that), and
// each sub-package keeps its imports small, so that a package's tests pull
// in only the helpers they use: this package imports only gRPC's status
// codes.
//
//	_, err := admin.CreateTable(ctx, req)
//	testkit.WantCode(t, "creating it again", err, codes.AlreadyExists, "users")
package testkit
