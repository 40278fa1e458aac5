// Package faultstore wraps a meta.Store (etcd) to inject the faults a
// coordination store can have, deterministically, for tests: a
// transaction that fails before it applies, one that applies and still
// answers an error (the outcome a client cannot know), lease renewals that
// fail or are delayed, and a lease that expires.
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

// Txn returns a transaction whose Commit may be failed by a rule.
func (f *Store) Txn(ctx context.Context) clientv3.Txn {
	return &txn{f: f, ctx: ctx, inner: f.Store.Txn(ctx)}
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

type txn struct {
	f     *Store
	ctx   context.Context
	inner clientv3.Txn
	then  []clientv3.Op
}

func (t *txn) If(cs ...clientv3.Cmp) clientv3.Txn { t.inner = t.inner.If(cs...); return t }

func (t *txn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = append(t.then, ops...)
	t.inner = t.inner.Then(ops...)
	return t
}

func (t *txn) Else(ops ...clientv3.Op) clientv3.Txn { t.inner = t.inner.Else(ops...); return t }

func (t *txn) Commit() (*clientv3.TxnResponse, error) {
	when, fault := t.f.rule(t.then)
	if !fault {
		return t.inner.Commit()
	}
	if when == AfterCommit {
		if _, err := t.inner.Commit(); err != nil {
			return nil, err
		}
	}
	return nil, ErrInjected
}
