// Package verify proves that a Tabula cluster keeps its promises under
// faults: continuous ingest with recorded outcomes, a fault injector, and a
// checker. HBase's IntegrationTestBigLinkedList and Accumulo's continuous
// ingest are the anchors; `tabula verify` is the command over it.
//
// Three workloads write to one table (schema.go) and record every
// operation, invocation and return, to an append-only history
// (history.go):
//
//   - linked lists: each new row, at a random key, points to the writer's
//     previous acknowledged row;
//   - counters: ReadModifyWrite increments, each returning the new value;
//   - chains: CheckAndMutate moves a row from step i to i+1 only if its
//     newest step is i, and reads learn the step after a refusal.
//
// Each operation ends acknowledged, failed (definitely not applied) or
// unknown (may have been applied; outcome.go says which errors are which).
// The Checker (check.go) then reads the whole table back and proves that
// no acknowledged write is lost, nothing unwritten appears, counters and
// chains agree with their histories, and those histories are linearizable
// (linearize.go, with porcupine).
//
// Against a running cluster:
//
//	h, _ := verify.CreateHistory("h.jsonl", "s1", verify.HistoryOptions{})
//	in := verify.StartIngest(ctx, cli.Open("verify"), h, verify.IngestOptions{Duration: time.Minute})
//	stats, err := in.Wait()
//	h.Close()
//	rep, err := verify.Check(ctx, cli.Open("verify"), "h.jsonl", verify.CheckOptions{})
//	if !rep.OK() { rep.WriteTo(os.Stdout) }
//
// Run (run.go) does it all on a local cluster of real processes started
// from the tabula binary (cluster.go, proc.go) while Agitate (agitate.go)
// kills, pauses and restarts tablet servers, masters and etcd, and
// measures how long each fault keeps writers waiting. With
// ClusterOptions.Secure (secure.go) every port speaks TLS, the masters and
// tablet servers require credentials, and the workload and checker connect
// as an admin bootstrapped into etcd, so the faults also exercise
// reconnecting with TLS and tokens. With ClusterOptions.ObjectStore
// (objectstore.go) the tablets live on SeaweedFS and each tablet server has
// its own folder: the agitator also restarts the store, makes it slow,
// throttling (503 SlowDown) or cut off mid-request through a proxy in
// front of it (storefaults.go, package storeproxy), and deletes a killed
// server's folder before its restart, as if its host were lost. Each
// fault's unavailability is measured from its start and from its repair.
// With ClusterOptions.Namespaces (netns.go), which Run sets when a
// partition fault is asked for, every master and tablet server runs in a
// Linux network namespace of its own on a private bridge, and the
// partition faults (partition.go) cut a server or the leader master off
// from etcd, isolate a server, or make its link slow or lossy; while a
// server is cut off from etcd a fence probe (fence.go) checks that it
// acknowledges nothing once etcd has dropped its lease.
package verify
