package meta

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// signalled repeats write until ch signals: a watch starts
// asynchronously, so a write made before it started is not seen (a
// repeat is harmless: a signal carries no value).
func signalled(t *testing.T, ch <-chan struct{}, write func()) {
	t.Helper()
	for {
		write()
		select {
		case _, ok := <-ch:
			if !ok {
				t.Fatal("the watch closed")
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestWatchSignalsChangesAndClosesWithItsContext(t *testing.T) {
	cli := newTwin(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLayout("test")
	ws, wt := WatchServers(ctx, cli, l), WatchTablets(ctx, cli, l)
	signalled(t, wt, func() { putTablet(t, cli, l, TabletRecord{Table: "t", ID: "a", State: StateUnassigned}) })
	var s1 ServerRecord
	signalled(t, ws, func() { s1 = register(t, cli, l, "s1", "addr1") })

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
