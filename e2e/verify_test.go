package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestVerifyUnderFaults runs a short `tabula verify run`: a cluster of real
// processes (tabula etcd, 2 masters, 3 tablet servers with 2 s leases)
// takes linked-list writes, read-modify-write counters and check-and-mutate
// chains while the agitator kill -9s and restarts tablet servers, pauses
// them past their lease, kill -9s the leader master and restarts etcd, at
// least three times each; then the checker reads the table back. Any lost
// acknowledged write, phantom row, counter or chain anomaly, history that
// is not linearizable, crash, or fault the writers did not recover from
// fails the test. The fault sequence follows -seed.
func TestVerifyUnderFaults(t *testing.T) {
	slow(t)
	flags := []string{
		"--duration", "45s",
		"--min-faults-per-kind", "3",
		"--fault-interval", "2s",
		"--recovery-timeout", "3m",
		"--writers", "6",
	}
	if secureAll() {
		flags = append(flags, "--secure")
	}
	verifyRun(t, "verify", 15*time.Minute, flags, nil)
}

// TestEtcdCommandKeepsDataAndLeasesAcrossKill: `tabula etcd` killed with
// -9 and started again on its data directory still holds the keys written
// before, and a lease granted before is still alive with the keys bound to
// it (etcd restarts the lease's TTL when it starts).
func TestEtcdCommandKeepsDataAndLeasesAcrossKill(t *testing.T) {
	slow(t)
	dir := t.TempDir()
	p := &proc{name: "etcd", addr: freeAddr(t), log: filepath.Join(dir, "etcd.log")}
	p.args = []string{"etcd", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client", p.addr, "--listen-peer", freeAddr(t)}
	p.start(t)
	t.Cleanup(p.kill)
	waitListening(t, p, readyWait)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := cli.Put(ctx, "plain", "v1"); err != nil {
		t.Fatal(err)
	}
	lease, err := cli.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "leased", "v2", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}

	p.kill()
	p.start(t)
	waitListening(t, p, readyWait)
	for _, k := range []string{"plain", "leased"} {
		var resp *clientv3.GetResponse
		for resp == nil || len(resp.Kvs) == 0 {
			if resp, err = cli.Get(ctx, k); err != nil && ctx.Err() != nil {
				t.Fatalf("get %s after the restart: %v", k, err)
			}
			if resp == nil {
				time.Sleep(50 * time.Millisecond)
			} else if len(resp.Kvs) == 0 {
				t.Fatalf("key %s is gone after the restart", k)
			}
		}
		if k == "leased" && clientv3.LeaseID(resp.Kvs[0].Lease) != lease.ID {
			t.Errorf("key %s is bound to lease %x after the restart, want %x", k, resp.Kvs[0].Lease, lease.ID)
		}
	}
	ttl, err := cli.TimeToLive(ctx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL <= 0 {
		t.Errorf("lease %x expired across the restart (TTL %d)", lease.ID, ttl.TTL)
	}
	if _, err := cli.KeepAliveOnce(ctx, lease.ID); err != nil {
		t.Errorf("renewing lease %x after the restart: %v", lease.ID, err)
	}
	if err := p.stop(); err != nil {
		t.Error(err)
	}
	p.checkLog(t)
}
