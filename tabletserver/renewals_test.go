package tabletserver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// renewals sits between a server and etcd (Options.WrapStore) and records
// the grants and renewals etcd accepted, with the earliest instant etcd may
// expire the lease after them: the instant the call was made (before etcd
// received it) plus the TTL etcd answered. Through Options.testHookRenewed
// it also records the server's serving deadline after each renewal the
// server applied.
//
// pause makes every answer from then on lost on its way back (the server
// sees an error), as when etcd becomes unreachable, and waits until the
// server has applied every renewal that did reach it: from then on nothing
// can move the server's deadline, so whether it serves depends only on
// that deadline, not on when the test looks. Wiring Options.PauseRenewals
// to isPaused also stops the server from sending renewals.
//
// With extraTTL, leases are granted that many seconds longer than the
// server asks for: etcd keeps the lease well past the server's own pause,
// whenever the server renews again.
type renewals struct {
	meta.Store
	extraTTL int64

	// mu protects the fields below.
	mu       sync.Mutex
	server   *Server // set once Start returned
	paused   bool
	accepted int           // renewals etcd accepted whose answer reached the server
	applied  int           // renewals the server applied to its lease state
	expiry   time.Time     // etcd cannot expire the lease before this
	deadline time.Duration // the latest serving deadline of the server (since its base)
}

// startWithRenewals starts a server (with edit applied to its options)
// whose etcd calls go through r, around any WrapStore edit sets, and
// waits until it has applied a renewal.
func (e *env) startWithRenewals(r *renewals, edit func(*Options)) *Server {
	e.t.Helper()
	srv := e.start(func(o *Options) {
		if edit != nil {
			edit(o)
		}
		inner := o.WrapStore
		o.WrapStore = func(s meta.Store) meta.Store {
			if inner != nil {
				s = inner(s)
			}
			r.Store = s
			return r
		}
		o.testHookRenewed = r.renewed
	})
	r.mu.Lock()
	r.server = srv
	r.mu.Unlock()
	eventually(e.t, 10*time.Second, "a lease renewal", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applied > 0
	})
	return srv
}

func (r *renewals) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	sent := time.Now()
	resp, err := r.Store.Grant(ctx, ttl+r.extraTTL)
	if err == nil {
		r.mu.Lock()
		r.extend(sent, resp.TTL)
		r.mu.Unlock()
	}
	return resp, err
}

func (r *renewals) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	sent := time.Now()
	resp, err := r.Store.KeepAliveOnce(ctx, id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		return nil, errors.New("renewals: answer lost (paused)")
	}
	if err == nil && resp.TTL > 0 {
		r.accepted++
		r.extend(sent, resp.TTL)
	}
	return resp, err
}

// extend records that etcd accepted a grant or renewal sent at sent with
// ttl seconds.
func (r *renewals) extend(sent time.Time, ttl int64) {
	if exp := sent.Add(time.Duration(ttl) * time.Second); exp.After(r.expiry) {
		r.expiry = exp
	}
}

// renewed is the server's testHookRenewed.
func (r *renewals) renewed(safeUntil time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied++
	r.deadline = max(r.deadline, safeUntil)
}

func (r *renewals) isPaused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

// resume lets answers through again.
func (r *renewals) resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = false
}

// pause loses every answer from now on and waits until the server has
// applied every renewal that reached it. It returns the server's final
// serving deadline as an instant, the earliest instant etcd may expire the
// lease, and how many times the server will have fenced once it is past
// its deadline.
func (r *renewals) pause(t *testing.T) (deadline, expiry time.Time, fences int64) {
	t.Helper()
	r.mu.Lock()
	r.paused = true
	r.mu.Unlock()
	eventually(t, 10*time.Second, "the server to apply the renewals it received", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.applied == r.accepted
	})
	r.mu.Lock()
	srv := r.server
	r.mu.Unlock()
	srv.leaseMu.Lock()
	fences = srv.fences.Load()
	if !srv.fenced {
		fences++ // it fences once it is past its deadline
	}
	srv.leaseMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	return srv.base.Add(r.deadline), r.expiry, fences
}
