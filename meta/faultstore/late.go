package faultstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// errLate is what a held-back transaction answers at once: a timeout, as a
// caller whose deadline passed before etcd answered sees it.
var errLate = fmt.Errorf("%w: %w: transaction held back, it may land later", context.DeadlineExceeded, ErrInjected)

// Late is a transaction held back by a LateCommit rule: its caller was
// answered a timeout at once, and etcd gets it only when the test calls
// Release.
type Late struct {
	f     *Store
	match TxnMatch
	held  chan struct{} // closed once a transaction was caught
	// Set before held is closed, read after.
	ops ops
}

// LateCommit holds back the next transaction that matches: its Commit
// answers at once an error that wraps context.DeadlineExceeded and
// ErrInjected without sending it, and Release sends it later. A test then
// plays "the caller gives up, the caller decides, the late transaction
// lands" in that order, without sleeps.
func (f *Store) LateCommit(match TxnMatch) *Late {
	l := &Late{f: f, match: match, held: make(chan struct{})}
	f.mu.Lock()
	f.late = append(f.late, l)
	f.mu.Unlock()
	return l
}

// Held is closed once a transaction was held back.
func (l *Late) Held() <-chan struct{} { return l.held }

// Release sends the held transaction to etcd now, as it was built, and
// returns etcd's answer (Succeeded is false when its guards no longer
// hold). It waits until a transaction is held, or ctx ends.
func (l *Late) Release(ctx context.Context) (*clientv3.TxnResponse, error) {
	select {
	case <-l.held:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	l.f.mu.Lock()
	inner := l.f.Store
	l.f.mu.Unlock()
	return l.ops.build(ctx, inner).Commit()
}

// holdLate catches o for the first LateCommit rule it matches, consuming
// the rule; nil if none matches.
func (f *Store) holdLate(o ops) *Late {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range f.late {
		if l.match != nil && !l.match(o.then) {
			continue
		}
		f.late = append(f.late[:i:i], f.late[i+1:]...)
		f.injected++
		l.ops = o
		close(l.held)
		return l
	}
	return nil
}

// AnswerTTL makes TimeToLive of lease id answer ttl seconds for as long as
// the lease exists (once it is gone etcd's own answer, TTL -1, goes
// through). etcd truncates the remaining time to whole seconds
// (server/etcdserver/v3_server.go: TTL: int64(le.Remaining().Seconds())),
// so TTL 0 is what a live lease with 0.6 s left answers.
func (f *Store) AnswerTTL(id clientv3.LeaseID, ttl int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ttls == nil {
		f.ttls = map[int64]int64{}
	}
	f.ttls[int64(id)] = ttl
}

// TimeToLive answers as etcd does: the remaining seconds truncated, -1 for
// a lease that does not exist; or what an AnswerTTL rule says while the
// lease exists.
func (f *Store) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	resp, err := f.Store.TimeToLive(ctx, id, opts...)
	if err != nil || resp.TTL < 0 {
		return resp, err
	}
	f.mu.Lock()
	ttl, ok := f.ttls[int64(id)]
	f.mu.Unlock()
	if !ok {
		return resp, nil
	}
	r := *resp
	r.TTL = ttl
	return &r, nil
}
