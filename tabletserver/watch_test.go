package tabletserver

import (
	"testing"
	"time"
)

// A server learns from etcd, without any call from the master, that a
// tablet it holds was handed on (here an operator's edit moves it to
// another server at a newer epoch) and stops serving it at once.
func TestTabletHandedOnInEtcdStopsBeingServed(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, []byte("m"), srv, 1))
	ref2 := e.load(c, e.assign("t2", []byte("m"), nil, srv, 1))
	if err := put(e.ctx, c, ref, "a", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	rec := e.tablet("t1").TabletRecord
	rec.Server, rec.Address, rec.Lease, rec.Epoch = "elsewhere", "127.0.0.1:1", 42, 2
	e.putRecord(rec)
	eventually(t, 10*time.Second, "t1 to stop being served", func() bool {
		return put(e.ctx, c, ref, "b", set("cf", "q", 1, "v")) != nil
	})
	wantNotServing(t, "write to a tablet handed on", put(e.ctx, c, ref, "b", set("cf", "q", 1, "v")), "users", "t1")
	if err := put(e.ctx, c, ref2, "n", set("cf", "q", 1, "v")); err != nil {
		t.Fatalf("an unrelated tablet stopped serving: %v", err)
	}
	// Deleting a held tablet's record (its table was dropped) stops it too.
	e.deleteRecord("users", "t2")
	eventually(t, 10*time.Second, "t2 to stop being served", func() bool {
		return put(e.ctx, c, ref2, "o", set("cf", "q", 1, "v")) != nil
	})
}
