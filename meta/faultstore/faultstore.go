// Package faultstore wraps a meta.Store (etcd, or its in-memory twin
// meta/memstore) to inject the faults a coordination store can have,
// deterministically, for tests: a
// transaction that fails before it applies, one that applies and still
// answers an error (the outcome a client cannot know), one that answers a
// timeout at once and lands later (late.go), lease renewals that fail or
// are delayed, a lease that expires, and a lease whose TimeToLive answers
// what etcd answers with under a second left (late.go).
//
//	fs := faultstore.New(client)
//	fs.FailTxn(faultstore.DeletesUnder(layout.AllTabletsPrefix()), faultstore.AfterCommit, 1)
//	srv := tabletserver.Start(ctx, tabletserver.Options{..., WrapStore: fs.Wrap})
//
// Rules are consumed in the order they were added; each applies to the
// next matching calls, as many times as it says.
package faultstore

import (
	"context"
	"errors"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// ErrInjected is the error injected faults answer.
var ErrInjected = errors.New("faultstore: injected fault")

// When says whether a failed transaction was applied.
type When int

const (
	// BeforeCommit fails the transaction without sending it.
	BeforeCommit When = iota
	// AfterCommit sends the transaction, lets it apply, and answers an
	// error anyway, as a response lost on the way back would.
	AfterCommit
)

// TxnMatch selects transactions by the operations of their Then branch.
type TxnMatch func(then []clientv3.Op) bool

// DeletesUnder matches transactions that delete a key under prefix (a
// split commit deletes its parent's tablet key).
func DeletesUnder(prefix string) TxnMatch {
	return func(then []clientv3.Op) bool {
		for _, op := range then {
			if op.IsDelete() && strings.HasPrefix(string(op.KeyBytes()), prefix) {
				return true
			}
		}
		return false
	}
}

// PutsUnder matches transactions that put a key under prefix.
func PutsUnder(prefix string) TxnMatch {
	return func(then []clientv3.Op) bool {
		for _, op := range then {
			if op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), prefix) {
				return true
			}
		}
		return false
	}
}

// Store is a meta.Store with injected faults. It is safe for concurrent
// use.
type Store struct {
	meta.Store

	mu        sync.Mutex
	txnRules  []*txnRule
	late      []*Late         // LateCommit rules, in the order they were added
	ttls      map[int64]int64 // AnswerTTL: lease → the TTL TimeToLive answers
	keepAlive struct {
		fail  int           // renewals still to fail
		block chan struct{} // while non-nil, renewals wait for it to close
	}
	injected int
}

type txnRule struct {
	match TxnMatch
	when  When
	times int
}

// ops is what a transaction was built of, to send it again later.
type ops struct {
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

// build returns ops as a transaction of s under ctx.
func (o ops) build(ctx context.Context, s meta.Store) clientv3.Txn {
	return s.Txn(ctx).If(o.cmps...).Then(o.then...).Else(o.els...)
}

// New wraps s.
func New(s meta.Store) *Store { return &Store{Store: s} }

// Wrap returns f with s as the store it wraps; it fits
// tabletserver.Options.WrapStore.
func (f *Store) Wrap(s meta.Store) meta.Store {
	f.mu.Lock()
	f.Store = s
	f.mu.Unlock()
	return f
}

// FailTxn makes the next times transactions that match fail, before or
// after they commit.
func (f *Store) FailTxn(match TxnMatch, when When, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txnRules = append(f.txnRules, &txnRule{match: match, when: when, times: times})
}

// FailKeepAlives makes the next n lease renewals fail (etcd unreachable).
func (f *Store) FailKeepAlives(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keepAlive.fail = n
}

// BlockKeepAlives makes lease renewals wait (a slow or partitioned etcd)
// until the returned function is called; a renewal whose context ends
// first fails with the context's error.
func (f *Store) BlockKeepAlives() (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.keepAlive.block = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.keepAlive.block == ch {
				f.keepAlive.block = nil
			}
			f.mu.Unlock()
			close(ch)
		})
	}
}

// Expire ends a lease at once, as etcd does when its TTL passes.
func (f *Store) Expire(ctx context.Context, id clientv3.LeaseID) error {
	_, err := f.Store.Revoke(ctx, id)
	return err
}

// Injected returns how many faults were injected so far.
func (f *Store) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// KeepAliveOnce renews a lease unless a fault says otherwise.
func (f *Store) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	f.mu.Lock()
	block := f.keepAlive.block
	fail := f.keepAlive.fail > 0
	if fail {
		f.keepAlive.fail--
		f.injected++
	}
	f.mu.Unlock()
	if fail {
		return nil, ErrInjected
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.Store.KeepAliveOnce(ctx, id)
}

// Txn returns a transaction whose Commit may be failed or held back by a
// rule.
func (f *Store) Txn(ctx context.Context) clientv3.Txn {
	return &txn{f: f, ctx: ctx}
}

// rule returns the first rule matching then, consuming one use of it.
func (f *Store) rule(then []clientv3.Op) (When, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.txnRules {
		if r.match != nil && !r.match(then) {
			continue
		}
		r.times--
		if r.times <= 0 {
			f.txnRules = append(f.txnRules[:i:i], f.txnRules[i+1:]...)
		}
		f.injected++
		return r.when, true
	}
	return 0, false
}

// txn records what it is built of and builds the real transaction at
// Commit, so that a held-back one can be sent later under another context.
type txn struct {
	f   *Store
	ctx context.Context
	ops ops
}

func (t *txn) If(cs ...clientv3.Cmp) clientv3.Txn { t.ops.cmps = append(t.ops.cmps, cs...); return t }

func (t *txn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.ops.then = append(t.ops.then, ops...)
	return t
}

func (t *txn) Else(ops ...clientv3.Op) clientv3.Txn { t.ops.els = append(t.ops.els, ops...); return t }

func (t *txn) Commit() (*clientv3.TxnResponse, error) {
	f := t.f
	f.mu.Lock()
	inner := f.Store
	f.mu.Unlock()
	if l := f.holdLate(t.ops); l != nil {
		return nil, errLate
	}
	when, fault := f.rule(t.ops.then)
	if !fault {
		return t.ops.build(t.ctx, inner).Commit()
	}
	if when == AfterCommit {
		if _, err := t.ops.build(t.ctx, inner).Commit(); err != nil {
			return nil, err
		}
	}
	return nil, ErrInjected
}
