package meta

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/tabuladb/tabula/internal/testkit/etcdtest"
)

// A master of an older release campaigns with etcd's concurrency package;
// one of this release with meta.Election. In one election they see each
// other: the same keys, the same order. Here an old leader resigns and a
// new candidate takes over, then an old candidate waits for the new
// leader.
func TestElectionMixesWithEtcdsConcurrencyPackage(t *testing.T) {
	t.Parallel() // its own etcd starts while other tests run
	cli := etcdtest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prefix := NewLayout("mixed").ElectionPrefix()

	oldSess, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
	if err != nil {
		t.Fatal(err)
	}
	defer oldSess.Close()
	old := concurrency.NewElection(oldSess, strings.TrimSuffix(prefix, "/"))
	if err := old.Campaign(ctx, "old:1"); err != nil {
		t.Fatal(err)
	}

	sess, err := NewSession(ctx, cli, 60)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	el := NewElection(sess, prefix)
	won := make(chan error, 1)
	go func() { won <- el.Campaign(ctx, "new:1") }()
	waitCount(t, cli, prefix, 2)
	select {
	case err := <-won:
		t.Fatalf("the new candidate won while the old leader leads: %v", err)
	default:
	}
	if err := old.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-won; err != nil {
		t.Fatal(err)
	}
	leader, err := old.Leader(ctx)
	if err != nil || string(leader.Kvs[0].Key) != el.Key() || string(leader.Kvs[0].Value) != "new:1" || leader.Kvs[0].CreateRevision != el.Rev() {
		t.Fatalf("the old package sees leader %v (%v); want %s created at %d", leader, err, el.Key(), el.Rev())
	}

	oldWaits := make(chan error, 1)
	go func() { oldWaits <- old.Campaign(ctx, "old:2") }()
	waitCount(t, cli, prefix, 2)
	select {
	case err := <-oldWaits:
		t.Fatalf("the old candidate won while the new leader leads: %v", err)
	default:
	}
	if err := el.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-oldWaits; err != nil {
		t.Fatal(err)
	}
}

// waitCount waits until prefix holds n keys, by watching it.
func waitCount(t *testing.T, cli *clientv3.Client, prefix string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	count := resp.Count
	if count >= n {
		return
	}
	for wr := range cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.IsCreate() {
				count++
			}
		}
		if count >= n {
			return
		}
	}
	t.Fatalf("%s never held %d keys", prefix, n)
}
