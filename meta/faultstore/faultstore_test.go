package faultstore

import (
	"context"
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/meta/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTwin returns the in-memory twin of etcd: these tests are of the
// faults, not of etcd (meta/metatest holds the twin to etcd), and the
// master's and tablet servers' tests wrap real etcd.
func newTwin(t *testing.T) *memstore.Store {
	t.Helper()
	s := memstore.New(memstore.Options{Clock: memstore.NewManualClock()})
	t.Cleanup(func() { s.Close() })
	return s
}

// A held-back transaction answers a timeout at once and applies only when
// released, under the guards it was built with.
func TestLateCommitAnswersATimeoutAndLandsWhenReleased(t *testing.T) {
	cli := newTwin(t)
	fs := New(cli)
	ctx := context.Background()
	guarded := func(ctx context.Context, value string) (*clientv3.TxnResponse, error) {
		return fs.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision("k"), "=", 0)).
			Then(clientv3.OpPut("k", value)).
			Commit()
	}

	late := fs.LateCommit(PutsUnder("k"))
	cctx, cancel := context.WithCancel(ctx)
	_, err := guarded(cctx, "late")
	cancel() // the caller has given up; the release must not need its context
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrInjected) {
		t.Fatalf("held-back commit answered %v; want a timeout that is an injected fault", err)
	}
	select {
	case <-late.Held():
	default:
		t.Fatal("Held is not closed after the transaction was held back")
	}
	if resp, err := cli.Get(ctx, "k"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("held-back transaction visible before its release: %v %v", resp, err)
	}
	resp, err := late.Release(ctx)
	if err != nil || !resp.Succeeded {
		t.Fatalf("release: %+v %v", resp, err)
	}
	if got, err := cli.Get(ctx, "k"); err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "late" {
		t.Fatalf("after the release k = %v %v", got, err)
	}

	// A second late transaction whose guard no longer holds lands as a
	// failed comparison; the rule was consumed, so the next commit goes
	// straight through.
	late = fs.LateCommit(nil)
	if _, err := guarded(ctx, "again"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if resp, err := late.Release(ctx); err != nil || resp.Succeeded {
		t.Fatalf("release of a transaction whose guard failed: %+v %v", resp, err)
	}
	if resp, err := guarded(ctx, "direct"); err != nil || resp.Succeeded {
		t.Fatalf("commit after the rule was used: %+v %v", resp, err)
	}
	if fs.Injected() != 2 {
		t.Fatalf("injected %d faults, want 2", fs.Injected())
	}
}

// TimeToLive answers as etcd does: -1 for a lease that is gone; an
// AnswerTTL rule stands for a lease with under a second left (etcd
// truncates to whole seconds) only while the lease exists.
func TestTimeToLiveAnswersAsEtcdRoundsIt(t *testing.T) {
	cli := newTwin(t)
	fs := New(cli)
	ctx := context.Background()
	g, err := cli.Grant(ctx, 30)
	if err != nil {
		t.Fatal(err)
	}
	ttl := func() int64 {
		t.Helper()
		resp, err := fs.TimeToLive(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		return resp.TTL
	}
	if got := ttl(); got < 28 || got > 30 {
		t.Fatalf("TTL of a fresh 30 s lease = %d", got)
	}
	fs.AnswerTTL(g.ID, 0)
	if got := ttl(); got != 0 {
		t.Fatalf("TTL with under a second left = %d, want 0", got)
	}
	if err := fs.Expire(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if got := ttl(); got != -1 {
		t.Fatalf("TTL of an expired lease = %d, want -1", got)
	}
}
