// Package e2e holds end-to-end tests that run Tabula as real operating
// system processes and break them on purpose. It has no library code; the
// tests are the product.
//
// TestMain builds the tabula binary once (go build ./cmd/tabula into a
// temporary directory). Each test then starts its own cluster: an embedded
// etcd inside the test process (internal/embedetcd, fsync off), two
// `tabula master` processes (a leader and a standby) and three
// `tabula tabletserver` processes on free loopback ports, with 2 s lease
// and election TTLs and one storage root under t.TempDir(). Every process
// writes its output to its own log file, printed when the test fails; every
// process is killed when the test ends, even if it panics. The tests talk to
// the cluster through the Go client library (package client), and, to
// check fencing, straight to a tablet server over gRPC.
//
// The tests and the promises (docs/CONTRACTS.md §7) they hold:
//
//   - TestKillTabletServerMidLoad: kill -9 of a tablet server under
//     concurrent writes loses no acknowledged write and half-applies no
//     failed one; the client carries on once the master reassigns.
//   - TestKillLeaderMaster: kill -9 of the leader master with a standby
//     running: data calls never fail, admin calls resume on the new leader.
//   - TestScanAcrossTabletsWhileTabletsMove: range scans over 10 tablets on
//     3 servers return exactly the expected rows in key order, with filters
//     and row limits, while tablets split, move and fail over.
//   - TestFencedServerStopsWritesBeforeTakeover: a tablet server paused
//     (SIGSTOP) past its lease refuses writes when it wakes; no write is
//     acknowledged by two owners.
//   - TestVerifyUnderFaults: a short `tabula verify run` (its own cluster:
//     tabula etcd, 2 masters, 3 tablet servers): linked lists, counters and
//     check-and-mutate chains under at least three of each fault (kill -9
//     and SIGSTOP of tablet servers, kill -9 of the leader master, etcd
//     restarts) lose no acknowledged write and stay linearizable.
//   - TestEtcdCommandKeepsDataAndLeasesAcrossKill: `tabula etcd` killed and
//     restarted on its data directory keeps its keys and leases.
//   - TestDevClusterRestartKeepsData: `tabula dev` keeps data across a
//     SIGTERM restart and a kill -9 restart on the same data directory.
//
// Run only these tests:
//
//	go test ./e2e/ -v
//	go test ./e2e/ -run TestKillLeaderMaster -v
//
// Flags and environment: -short skips them all; -seed N replays the
// randomized parts (the seed is logged); E2E_RACE=1 builds the binary with
// the race detector (a race or crash in any process's log fails the test);
// E2E_KEEP=1 keeps the cluster tests' directories (logs and data).
package e2e
