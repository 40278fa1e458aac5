package meta

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// signalled waits for ch's next signal (a hang guard of a minute fails
// the test).
func signalled(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatal("the watch closed")
		}
	case <-time.After(time.Minute):
		t.Fatal("no signal")
	}
}

func TestWatchSignalsChangesAndClosesWithItsContext(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLayout("test")
	ws, wt := WatchServers(ctx, cli, l), WatchTablets(ctx, cli, l)
	// The first signal says the watch is established, before any change:
	// a reader re-reading then misses nothing written since it opened it.
	signalled(t, wt)
	signalled(t, ws)
	putTablet(t, cli, l, TabletRecord{Table: "t", ID: "a", State: StateUnassigned})
	signalled(t, wt)
	s1 := register(t, cli, l, "s1", "addr1")
	signalled(t, ws)

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	_, rev, err := GetServer(ctx, cli, l, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(s1.Lease)); err != nil {
		t.Fatal(err)
	}
	for ch := range WatchServer(wctx, cli, l, "s1", rev+1) {
		if !ch.Deleted {
			t.Fatalf("change %+v; want the registration deleted with its lease", ch)
		}
		break
	}

	cancel()
	for range ws {
	}
	for range wt {
	}
}
