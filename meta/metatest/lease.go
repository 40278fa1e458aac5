package metatest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// Leases.
var _ = register(
	testCase{name: "LeaseTimeToLive", run: testTimeToLive},
	testCase{name: "LeaseRevokeDeletesItsKeys", run: testRevoke},
	testCase{name: "LeaseExpiryDeletesItsKeys", slow: true, run: testExpiry},
	testCase{name: "LeaseKeepAlive", slow: true, run: testKeepAlive},
)

// expectGone checks every answer about a lease that no longer exists.
func expectGone(t *testing.T, h Harness, id clientv3.LeaseID) {
	t.Helper()
	c := ctx(t)
	ttl, err := h.Store.TimeToLive(c, id)
	if err != nil || ttl.TTL != -1 {
		t.Fatalf("TimeToLive of a gone lease: %+v %v, want TTL -1", ttl, err)
	}
	if gone, err := meta.LeaseGone(c, h.Store, int64(id)); !gone || err != nil {
		t.Fatalf("LeaseGone of a gone lease: %v %v", gone, err)
	}
	if _, err := h.Store.KeepAliveOnce(c, id); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("KeepAliveOnce of a gone lease: %v, want ErrLeaseNotFound", err)
	}
	if _, err := h.Store.Revoke(c, id); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("Revoke of a gone lease: %v, want ErrLeaseNotFound", err)
	}
	ls, err := h.Store.Leases(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Leases {
		if l.ID == id {
			t.Fatal("Leases lists a gone lease")
		}
	}
}

func testTimeToLive(t *testing.T, h Harness, p string) {
	c := ctx(t)
	g, err := h.Store.Grant(c, 60)
	if err != nil || g.TTL != 60 || g.ID == 0 {
		t.Fatalf("grant: %+v %v", g, err)
	}
	put(t, h, p+"b", "1", clientv3.WithLease(g.ID))
	put(t, h, p+"a", "1", clientv3.WithLease(g.ID))
	ttl, err := h.Store.TimeToLive(c, g.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 60 || ttl.TTL < 55 || ttl.TTL > 60 || ttl.ID != g.ID {
		t.Fatalf("TimeToLive: %+v %v", ttl, err)
	}
	var ks []string
	for _, k := range ttl.Keys {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	if !slices.Equal(ks, []string{p + "a", p + "b"}) {
		t.Fatalf("attached keys %v", ks)
	}
	if gone, err := meta.LeaseGone(c, h.Store, int64(g.ID)); gone || err != nil {
		t.Fatalf("LeaseGone of a live lease: %v %v", gone, err)
	}
	ls, err := h.Store.Leases(c)
	if err != nil || !slices.ContainsFunc(ls.Leases, func(l clientv3.LeaseStatus) bool { return l.ID == g.ID }) {
		t.Fatalf("Leases: %+v %v", ls, err)
	}
	// A lease lives at least 2 s, as on a default etcd member.
	short, err := h.Store.Grant(c, 1)
	if err != nil || short.TTL != 2 {
		t.Fatalf("grant of 1 s: %+v %v, want a TTL of 2", short, err)
	}
	ka, err := h.Store.KeepAliveOnce(c, g.ID)
	if err != nil || ka.TTL != 60 || ka.ID != g.ID {
		t.Fatalf("KeepAliveOnce: %+v %v", ka, err)
	}
}

// Revoke deletes the lease's keys, in one revision, with delete events.
func testRevoke(t *testing.T, h Harness, p string) {
	c := ctx(t)
	id := grant(t, h, 60)
	put(t, h, p+"a", "1", clientv3.WithLease(id))
	put(t, h, p+"b", "1", clientv3.WithLease(id))
	put(t, h, p+"c", "kept")
	wc, cancel := context.WithCancel(c)
	defer cancel()
	wch := h.Store.Watch(wc, p, clientv3.WithPrefix())
	rr, err := h.Store.Revoke(c, id)
	if err != nil {
		t.Fatal(err)
	}
	rev := rr.Header.Revision
	expectEvents(t, c, wch, event{mvccpb.DELETE, p + "a", "", rev}, event{mvccpb.DELETE, p + "b", "", rev})
	if got := keys(get(t, h, p, clientv3.WithPrefix())); !slices.Equal(got, []string{p + "c"}) {
		t.Fatalf("left after revoke: %v", got)
	}
	expectGone(t, h, id)
}

// A lease that is not kept alive expires: its keys are deleted with
// events, and every answer about it says it is gone.
func testExpiry(t *testing.T, h Harness, p string) {
	c := ctx(t)
	g, err := h.Store.Grant(c, 2)
	if err != nil {
		t.Fatal(err)
	}
	put(t, h, p+"server", "addr", clientv3.WithLease(g.ID))
	wc, cancel := context.WithCancel(c)
	defer cancel()
	wch := h.Store.Watch(wc, p, clientv3.WithPrefix())
	h.expire(g.TTL)
	wr := next(t, c, wch)
	if len(wr.Events) != 1 || wr.Events[0].Type != mvccpb.DELETE || string(wr.Events[0].Kv.Key) != p+"server" {
		t.Fatalf("want the key's delete, got %v", wr.Events)
	}
	if n := get(t, h, p+"server").Count; n != 0 {
		t.Fatal("the key of an expired lease is still there")
	}
	expectGone(t, h, g.ID)
}

// KeepAlive renews a lease until it is revoked; then its channel closes,
// as does a new KeepAlive of the gone lease.
func testKeepAlive(t *testing.T, h Harness, p string) {
	c := ctx(t)
	id := grant(t, h, 2)
	kc, cancel := context.WithCancel(c)
	defer cancel()
	ch, err := h.Store.KeepAlive(kc, id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r == nil || r.ID != id || r.TTL != 2 {
			t.Fatalf("keepalive answer %+v", r)
		}
	case <-c.Done():
		t.Fatal("no keepalive answer")
	}
	if _, err := h.Store.Revoke(c, id); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c, ch, "the keepalive channel of a revoked lease")
	// KeepAlive of a lease that is gone answers a channel that closes.
	ch, err = h.Store.KeepAlive(kc, id)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, c, ch, "the keepalive channel of a gone lease")
}
