// Package metatest is the conformance suite of meta.Store: every
// behaviour of etcd that Tabula relies on (revisions and guards,
// transactions, historical reads, paging, watches, progress, leases and
// their expiry), and meta's own records, fences and election at the store
// level. It runs on embedded etcd and on the in-memory twin
// (meta/memstore), which must both pass it: that is what lets tests that
// do not test etcd itself run on the twin. meta's tests run it on both
// (meta/conformance_test.go), in the test binary that links etcd anyway.
//
//	func TestConformance(t *testing.T) {
//		metatest.Run(t, func(t *testing.T) metatest.Harness {
//			clock := memstore.NewManualClock()
//			s := memstore.New(memstore.Options{Clock: clock})
//			t.Cleanup(func() { s.Close() })
//			return metatest.Harness{Store: s, Advance: clock.Advance}
//		})
//	}
//
// The cases share nothing but the store: each writes under its own
// prefix, so one etcd can serve them all. Cases that wait for real time
// on etcd (lease expiry, keepalives) run in parallel with each other and
// assert nothing about revisions that others' writes could move.
package metatest

import (
	"context"
	"regexp"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// Harness is one store under test.
type Harness struct {
	// Store is the store. It may be shared by the cases (one etcd).
	Store meta.Store
	// Advance moves the store's lease clock on by d (the twin's
	// ManualClock). Nil means real time: the cases then wait for leases
	// to expire, with the shortest TTL etcd grants (2 s).
	Advance func(d time.Duration)
}

// expire lets a lease of ttl seconds run out: on a manual clock at once;
// on real time the caller waits for the effect (an event), never a sleep.
func (h Harness) expire(ttl int64) {
	if h.Advance != nil {
		h.Advance(time.Duration(ttl+1) * time.Second)
	}
}

type testCase struct {
	name string
	// slow cases wait for real time on etcd; they run in parallel and
	// must not assert exact revisions.
	slow bool
	run  func(t *testing.T, h Harness, p string)
}

// cases are all the suite's cases, file by file.
var cases []testCase

func register(cs ...testCase) bool {
	cases = append(cases, cs...)
	return true
}

// Run runs the whole suite; newHarness is called once per case.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.slow {
				t.Parallel()
			}
			c.run(t, newHarness(t), prefix(t))
		})
	}
}

var unsafeKey = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// prefix is the case's own key prefix, "/<test name>/".
func prefix(t *testing.T) string {
	return "/" + unsafeKey.ReplaceAllString(t.Name(), "_") + "/"
}

// ctx is a test's context: bounded, so that a wait for an event that never
// comes fails instead of hanging.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func put(t *testing.T, h Harness, key, val string, opts ...clientv3.OpOption) *clientv3.PutResponse {
	t.Helper()
	resp, err := h.Store.Put(ctx(t), key, val, opts...)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp
}

func get(t *testing.T, h Harness, key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
	t.Helper()
	resp, err := h.Store.Get(ctx(t), key, opts...)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return resp
}

func grant(t *testing.T, h Harness, ttl int64) clientv3.LeaseID {
	t.Helper()
	g, err := h.Store.Grant(ctx(t), ttl)
	if err != nil {
		t.Fatal(err)
	}
	return g.ID
}

// keys returns the keys of kvs as strings.
func keys(resp *clientv3.GetResponse) []string {
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

// waitClosed drains ch until it closes; it fails the test if ctx ends
// first.
func waitClosed[T any](t *testing.T, c context.Context, ch <-chan T, what string) {
	t.Helper()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-c.Done():
			t.Fatalf("%s stayed open", what)
		}
	}
}
