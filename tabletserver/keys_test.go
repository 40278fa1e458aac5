package tabletserver

import (
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// waiters returns how many callers hold or wait for key's lock.
func (k *keyLocks) waiters(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l := k.m[key]; l != nil {
		return l.refs
	}
	return 0
}

// The master may send LoadTablet for a split child as soon as the split's
// commit is visible in etcd, while the splitting server is still opening
// the child. The load must wait for the split and find the child held, not
// open a second engine on the child's folder (two engines on one folder
// pick the same file numbers and overwrite each other's manifest).
func TestLoadOfASplitChildDuringTheSplitFindsItHeld(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("parent", nil, nil, srv, 1))
	for _, row := range []string{"a", "k", "z"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatal(err)
		}
	}
	loadErr := make(chan error, 1)
	srv.testHookSplitCommitted = func(left, _ meta.TabletRecord) {
		go func() {
			_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: left.ToProto(), Schema: e.schema})
			loadErr <- err
		}()
		// Let the load either finish (the bug) or queue behind the split
		// on the child's key lock (the fix) before the split goes on.
		key := tabletKey(left.Table, left.ID)
		deadline := time.Now().Add(20 * time.Second)
		for srv.keys.waiters(key) < 2 && len(loadErr) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	resp, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")})
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	if err := <-loadErr; err != nil {
		t.Fatalf("LoadTablet of the split child: %v", err)
	}
	srv.engines.Lock()
	open := 0
	for _, tb := range srv.engines.m {
		if !tb.Closed() {
			open++
		}
	}
	srv.engines.Unlock()
	if open != 2 {
		t.Fatalf("%d engines open after the split, want one per child", open)
	}
	for _, child := range resp.Tablets {
		cref := &tabulapb.TabletRef{Table: "users", TabletId: child.TabletId, Epoch: child.Epoch}
		row := string(child.StartKey)
		if row == "" {
			row = "b"
		}
		if err := put(e.ctx, c, cref, row+"x", set("cf", "q", 2, "after")); err != nil {
			t.Fatalf("write to child %s: %v", child.TabletId, err)
		}
	}
}
