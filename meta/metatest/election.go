package metatest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// The election (meta/election.go).
var _ = register(
	testCase{name: "ElectionNextLeadsWhenTheLeaderResigns", run: testElectionResign},
	testCase{name: "ElectionNextLeadsWhenTheLeadersLeaseExpires", slow: true, run: testElectionExpiry},
	testCase{name: "ElectionCampaignEndsWithItsContext", run: testElectionCtx},
	testCase{name: "SessionDoneWhenItsLeaseIsRevoked", slow: true, run: testSessionRevoked},
)

// candidate is one campaigner in a test.
type candidate struct {
	sess *meta.Session
	el   *meta.Election
	done chan error // Campaign's answer
}

// newCandidate opens a session of ttl seconds under sctx and starts its
// campaign with value val; the session is closed when the test ends.
func newCandidate(t *testing.T, h Harness, sctx context.Context, p, val string, ttl int) *candidate {
	t.Helper()
	sess, err := meta.NewSession(sctx, h.Store, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	c := &candidate{sess: sess, el: meta.NewElection(sess, p+"election"), done: make(chan error, 1)}
	go func() { c.done <- c.el.Campaign(sctx, val) }()
	return c
}

// wait returns Campaign's answer; it fails the test if none comes.
func (c *candidate) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-ctx(t).Done():
		t.Fatal("the campaign did not end")
		return nil
	}
}

// expectLeader checks that c leads: its key is the prefix's first
// created, with its value, and its Rev is that key's CreateRevision.
func expectLeader(t *testing.T, h Harness, p string, c *candidate, val string) {
	t.Helper()
	want := fmt.Sprintf("%selection/%x", p, c.sess.Lease())
	if c.el.Key() != want {
		t.Fatalf("key %q, want %q (etcd's concurrency package's)", c.el.Key(), want)
	}
	first := get(t, h, p+"election/", clientv3.WithFirstCreate()...)
	if len(first.Kvs) == 0 || string(first.Kvs[0].Key) != want || string(first.Kvs[0].Value) != val ||
		first.Kvs[0].CreateRevision != c.el.Rev() || clientv3.LeaseID(first.Kvs[0].Lease) != c.sess.Lease() {
		t.Fatalf("leader key %v; want %s=%s created at %d", first.Kvs, want, val, c.el.Rev())
	}
}

// expectWaiting checks that c's campaign has not ended.
func expectWaiting(t *testing.T, c *candidate) {
	t.Helper()
	select {
	case err := <-c.done:
		t.Fatalf("a second candidate's campaign ended while the first leads: %v", err)
	default:
	}
}

func testElectionResign(t *testing.T, h Harness, p string) {
	c := ctx(t)
	a := newCandidate(t, h, c, p, "a:1", 60)
	if err := a.wait(t); err != nil {
		t.Fatal(err)
	}
	expectLeader(t, h, p, a, "a:1")
	b := newCandidate(t, h, c, p, "b:1", 60)
	// b's key exists once its campaign put it: then it waits for a's.
	waitKeys(t, h, p+"election/", 2)
	expectWaiting(t, b)
	if err := a.el.Resign(c); err != nil {
		t.Fatal(err)
	}
	if err := b.wait(t); err != nil {
		t.Fatal(err)
	}
	expectLeader(t, h, p, b, "b:1")
	if a.el.Key() != "" {
		t.Fatalf("a resigned but still has key %q", a.el.Key())
	}
}

// The leader's keepalive stops (its process paused, its network cut):
// when its lease expires, the next candidate leads, and the old leader's
// session reports Done.
func testElectionExpiry(t *testing.T, h Harness, p string) {
	c := ctx(t)
	actx, stopA := context.WithCancel(c)
	a := newCandidate(t, h, actx, p, "a:1", 2)
	if err := a.wait(t); err != nil {
		t.Fatal(err)
	}
	b := newCandidate(t, h, c, p, "b:1", 60)
	waitKeys(t, h, p+"election/", 2)
	expectWaiting(t, b)
	stopA() // a's keepalive stops; its lease is not revoked
	<-a.sess.Done()
	h.expire(2)
	if err := b.wait(t); err != nil {
		t.Fatal(err)
	}
	expectLeader(t, h, p, b, "b:1")
}

// A campaign whose context ends answers its error and withdraws its key.
func testElectionCtx(t *testing.T, h Harness, p string) {
	c := ctx(t)
	a := newCandidate(t, h, c, p, "a:1", 60)
	if err := a.wait(t); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(c)
	sess, err := meta.NewSession(c, h.Store, 60)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	b := &candidate{sess: sess, el: meta.NewElection(sess, p+"election/"), done: make(chan error, 1)}
	go func() { b.done <- b.el.Campaign(bctx, "b:1") }()
	waitKeys(t, h, p+"election/", 2)
	cancel()
	if err := b.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("campaign with a cancelled context: %v", err)
	}
	if n := get(t, h, fmt.Sprintf("%selection/%x", p, sess.Lease())).Count; n != 0 {
		t.Fatal("a cancelled campaign left its key")
	}
	expectLeader(t, h, p, a, "a:1")
}

func testSessionRevoked(t *testing.T, h Harness, p string) {
	c := ctx(t)
	sess, err := meta.NewSession(c, h.Store, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := h.Store.Revoke(c, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-c.Done():
		t.Fatal("a session whose lease was revoked is not done")
	}
}

// waitKeys waits until n keys exist under prefix, by watching it.
func waitKeys(t *testing.T, h Harness, prefix string, n int64) {
	t.Helper()
	c := ctx(t)
	wc, cancel := context.WithCancel(c)
	defer cancel()
	resp := get(t, h, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	wch := h.Store.Watch(wc, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	for count := resp.Count; count < n; {
		for _, ev := range next(t, c, wch).Events {
			if ev.Type == clientv3.EventTypePut && ev.IsCreate() {
				count++
			}
		}
	}
}
