package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
)

// The behaviour the twin shares with etcd is tested by meta/metatest, on
// both; here only what is the twin's own.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ meta.Store = (*memstore.Store)(nil)

// What the twin does not implement is refused with an error that says
// so, never done some other way.
func TestUnsupportedIsRefused(t *testing.T) {
	s := memstore.New(memstore.Options{Clock: memstore.NewManualClock()})
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Compact(ctx, 1); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Compact: %v", err)
	}
	nested := clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut("a", "1")}, nil)
	if _, err := s.Txn(ctx).Then(nested).Commit(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("a nested txn: %v", err)
	}
	wch := s.Watch(ctx, "a", clientv3.WithProgressNotify())
	wr := <-wch
	if err := wr.Err(); err == nil || !wr.Canceled {
		t.Errorf("a watch with periodic progress: %+v", wr)
	}
}

// A closed store answers ErrClosed and closes its watches; Close is
// idempotent.
func TestClose(t *testing.T) {
	s := memstore.New(memstore.Options{})
	ctx := context.Background()
	wch := s.Watch(ctx, "a")
	if _, err := s.Put(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	<-wch
	s.Close()
	s.Close()
	for range wch {
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, memstore.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

// On the default real clock a lease expires by itself, its keys' delete
// events reach the watchers, and a kept-alive lease lives on.
func TestRealTimeExpiry(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	short, err := s.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeepAlive(ctx, kept.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "short", "", clientv3.WithLease(short.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "kept", "", clientv3.WithLease(kept.ID)); err != nil {
		t.Fatal(err)
	}
	for wr := range s.Watch(ctx, "short", clientv3.WithRev(1)) {
		if len(wr.Events) > 0 && wr.Events[len(wr.Events)-1].Type == clientv3.EventTypeDelete {
			break
		}
	}
	if ttl, err := s.TimeToLive(ctx, short.ID); err != nil || ttl.TTL != -1 {
		t.Fatalf("TimeToLive of the expired lease: %+v %v", ttl, err)
	}
	if resp, err := s.Get(ctx, "kept"); err != nil || resp.Count != 1 {
		t.Fatalf("the kept-alive lease's key: %+v %v", resp, err)
	}
}

// With under a second left TimeToLive answers 0, as etcd (it truncates),
// and the lease is not gone: only TTL -1 is (meta.LeaseGone).
func TestTimeToLiveTruncatesLikeEtcd(t *testing.T) {
	clock := memstore.NewManualClock()
	s := memstore.New(memstore.Options{Clock: clock})
	defer s.Close()
	ctx := context.Background()
	g, err := s.Grant(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(9500 * time.Millisecond)
	if ttl, err := s.TimeToLive(ctx, g.ID); err != nil || ttl.TTL != 0 {
		t.Fatalf("TimeToLive with 0.5 s left: %+v %v, want TTL 0", ttl, err)
	}
	if gone, err := meta.LeaseGone(ctx, s, int64(g.ID)); gone || err != nil {
		t.Fatalf("LeaseGone with 0.5 s left: %v %v", gone, err)
	}
	clock.Advance(500 * time.Millisecond)
	if gone, err := meta.LeaseGone(ctx, s, int64(g.ID)); !gone || err != nil {
		t.Fatalf("LeaseGone at the TTL: %v %v", gone, err)
	}
}

// The twin on a manual clock: a lease expires when the test moves the
// clock past its TTL, and its keys are gone when Advance returns.
func Example() {
	ctx := context.Background()
	clock := memstore.NewManualClock()
	s := memstore.New(memstore.Options{Clock: clock})
	defer s.Close()

	g, _ := s.Grant(ctx, 10)
	s.Put(ctx, "servers/s1", "10.0.0.7:7070", clientv3.WithLease(g.ID))
	clock.Advance(9 * time.Second)
	ttl, _ := s.TimeToLive(ctx, g.ID)
	fmt.Println("after 9 s: TTL", ttl.TTL)
	clock.Advance(time.Second)
	ttl, _ = s.TimeToLive(ctx, g.ID)
	resp, _ := s.Get(ctx, "servers/s1")
	fmt.Println("after 10 s: TTL", ttl.TTL, "keys", resp.Count)
	// Output:
	// after 9 s: TTL 1
	// after 10 s: TTL -1 keys 0
}
