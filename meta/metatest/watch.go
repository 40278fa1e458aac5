package metatest

import (
	"context"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Watches.
var _ = register(
	testCase{name: "WatchReplaysFromARevision", run: testWatchReplay},
	testCase{name: "WatchGetsATxnInOneResponse", run: testWatchTxn},
	testCase{name: "WatchEndsWithItsContext", run: testWatchCancel},
	testCase{name: "WatchProgressAfterWritesElsewhere", run: testWatchProgress},
	testCase{name: "WatchFiltersPutsOrDeletes", run: testWatchFilters},
)

func testWatchFilters(t *testing.T, h Harness, p string) {
	c := ctx(t)
	wc, cancel := context.WithCancel(c)
	defer cancel()
	start := put(t, h, p+"a", "1").Header.Revision
	d, err := h.Store.Delete(c, p+"a")
	if err != nil {
		t.Fatal(err)
	}
	last := put(t, h, p+"a", "2").Header.Revision
	expectEvents(t, c, h.Store.Watch(wc, p+"a", clientv3.WithRev(start), clientv3.WithFilterPut()),
		event{mvccpb.DELETE, p + "a", "", d.Header.Revision})
	expectEvents(t, c, h.Store.Watch(wc, p+"a", clientv3.WithRev(start), clientv3.WithFilterDelete()),
		event{mvccpb.PUT, p + "a", "1", start}, event{mvccpb.PUT, p + "a", "2", last})
}

// event is what a test expects of one event.
type event struct {
	typ   mvccpb.Event_EventType
	key   string
	value string
	rev   int64
}

// next returns the next response of wch that is not a progress
// notification; it fails the test if the channel closes or ctx ends.
func next(t *testing.T, c context.Context, wch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	for {
		select {
		case wr, ok := <-wch:
			if !ok {
				t.Fatal("watch channel closed")
			}
			if err := wr.Err(); err != nil {
				t.Fatalf("watch: %v", err)
			}
			if wr.IsProgressNotify() || wr.Created {
				continue
			}
			return wr
		case <-c.Done():
			t.Fatal("no watch response in time")
		}
	}
}

// expectEvents reads responses until it has len(want) events and checks
// them.
func expectEvents(t *testing.T, c context.Context, wch clientv3.WatchChan, want ...event) []*clientv3.Event {
	t.Helper()
	var got []*clientv3.Event
	for len(got) < len(want) {
		got = append(got, next(t, c, wch).Events...)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		e := got[i]
		if e.Type != w.typ || string(e.Kv.Key) != w.key || string(e.Kv.Value) != w.value || e.Kv.ModRevision != w.rev {
			t.Errorf("event %d: %v %s=%q at %d; want %v %s=%q at %d", i, e.Type, e.Kv.Key, e.Kv.Value, e.Kv.ModRevision, w.typ, w.key, w.value, w.rev)
		}
	}
	return got
}

// A watch from an old revision replays the history from there, then
// follows; PrevKV carries the value before each event.
func testWatchReplay(t *testing.T, h Harness, p string) {
	c := ctx(t)
	r1 := put(t, h, p+"a", "1").Header.Revision
	put(t, h, p+"b", "1")
	put(t, h, "/elsewhere"+p, "x")
	d, err := h.Store.Delete(c, p+"a")
	if err != nil {
		t.Fatal(err)
	}
	wc, cancel := context.WithCancel(c)
	defer cancel()
	wch := h.Store.Watch(wc, p, clientv3.WithPrefix(), clientv3.WithRev(r1+1), clientv3.WithPrevKV())
	r5 := put(t, h, p+"b", "2").Header.Revision
	evs := expectEvents(t, c, wch,
		event{mvccpb.PUT, p + "b", "1", r1 + 1},
		event{mvccpb.DELETE, p + "a", "", d.Header.Revision},
		event{mvccpb.PUT, p + "b", "2", r5})
	if evs[0].PrevKv != nil || evs[1].PrevKv == nil || string(evs[1].PrevKv.Value) != "1" || string(evs[2].PrevKv.Value) != "1" {
		t.Fatalf("prev kvs: %v %v %v", evs[0].PrevKv, evs[1].PrevKv, evs[2].PrevKv)
	}
	if !evs[2].IsModify() || evs[0].IsCreate() != true {
		t.Fatalf("create/modify: %v %v", evs[0].IsCreate(), evs[2].IsModify())
	}
	// A watch from revision 0 starts after the current one.
	wch0 := h.Store.Watch(wc, p+"b")
	r6 := put(t, h, p+"b", "3").Header.Revision
	expectEvents(t, c, wch0, event{mvccpb.PUT, p + "b", "3", r6})
}

// A split is one transaction; its watchers get its events in one
// response (the master counts splits by response).
func testWatchTxn(t *testing.T, h Harness, p string) {
	c := ctx(t)
	put(t, h, p+"parent", "p")
	wc, cancel := context.WithCancel(c)
	defer cancel()
	wch := h.Store.Watch(wc, p, clientv3.WithPrefix())
	resp, err := h.Store.Txn(c).Then(clientv3.OpDelete(p+"parent"), clientv3.OpPut(p+"left", "l"), clientv3.OpPut(p+"right", "r")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	wr := next(t, c, wch)
	if len(wr.Events) != 3 || wr.Header.Revision < resp.Header.Revision {
		t.Fatalf("one response with the txn's 3 events, got %d at %d", len(wr.Events), wr.Header.Revision)
	}
	for _, e := range wr.Events {
		if e.Kv.ModRevision != resp.Header.Revision {
			t.Fatalf("event at %d, txn at %d", e.Kv.ModRevision, resp.Header.Revision)
		}
	}
}

// Cancelling a watch's context closes its channel.
func testWatchCancel(t *testing.T, h Harness, p string) {
	c := ctx(t)
	wc, cancel := context.WithCancel(c)
	wch := h.Store.Watch(wc, p+"k")
	put(t, h, p+"k", "1")
	next(t, c, wch)
	cancel()
	waitClosed(t, c, wch, "the channel of a cancelled watch")
}

// RequestProgress on the watch's context makes its watches report the
// current revision, which writes outside them move (the master's index
// syncs on it).
func testWatchProgress(t *testing.T, h Harness, p string) {
	c := ctx(t)
	wc, cancel := context.WithCancel(clientv3.WithRequireLeader(c))
	defer cancel()
	wch := h.Store.Watch(wc, p+"watched/", clientv3.WithPrefix())
	// The watch exists once it answers: make it answer an event.
	put(t, h, p+"watched/a", "1")
	next(t, c, wch)
	want := put(t, h, p+"elsewhere", "x").Header.Revision
	if err := h.Store.RequestProgress(clientv3.WithRequireLeader(c)); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case wr, ok := <-wch:
			if !ok {
				t.Fatal("watch channel closed")
			}
			if !wr.IsProgressNotify() {
				t.Fatalf("want a progress notification, got %+v", wr)
			}
			if wr.Header.Revision < want {
				t.Fatalf("progress at %d, want at least %d", wr.Header.Revision, want)
			}
			return
		case <-c.Done():
			t.Fatal("no progress notification")
		}
	}
}
