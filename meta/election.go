package meta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Leader election over a Store, with the keys and the semantics of etcd's
// concurrency package (client/v3/concurrency: session.go, election.go,
// key.go), which needs a concrete *clientv3.Client and so cannot run on
// the twin (meta/memstore). The keys are the same, so masters of either
// kind campaign in one election and etcdctl shows what it always showed:
//
//	<prefix><lease id in hex>   the candidate's value (the master's address),
//	                            bound to its session's lease
//
// The leader is the candidate whose key has the lowest CreateRevision
// under the prefix. A candidate waits for the deletion of the key created
// just before its own, then looks again, so each wakes only for its
// predecessor.

// DefaultSessionTTL is a session's TTL when none is given, in seconds, as
// etcd's concurrency package.
const DefaultSessionTTL = 60

// ErrElectionNotLeader is what Proclaim answers when this candidate's key
// is gone or was replaced.
var ErrElectionNotLeader = errors.New("meta: election: not leader")

// Session is a lease kept alive until Close, or until it is lost.
type Session struct {
	store  Store
	id     clientv3.LeaseID
	ttl    int
	ctx    context.Context // the session's life; Close cancels it
	cancel context.CancelFunc
	donec  chan struct{} // closed when the keepalive ends
}

// NewSession grants a lease of ttl seconds (DefaultSessionTTL if ttl <= 0)
// and keeps it alive until Close, until ctx ends or until the lease is
// lost (Done). ctx bounds the session's whole life, not only this call.
func NewSession(ctx context.Context, s Store, ttl int) (*Session, error) {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	g, err := s.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	ka, err := s.KeepAlive(sctx, g.ID)
	if err != nil {
		cancel()
		return nil, err
	}
	sess := &Session{store: s, id: g.ID, ttl: ttl, ctx: sctx, cancel: cancel, donec: make(chan struct{})}
	// The keepalive channel closes when the lease is gone, when etcd
	// stops answering for a TTL, or when sctx ends.
	go func() {
		defer close(sess.donec)
		defer cancel()
		for range ka {
		}
	}()
	return sess, nil
}

// Lease is the session's lease.
func (s *Session) Lease() clientv3.LeaseID { return s.id }

// Done is closed when the session ends: its lease was lost, or Close.
func (s *Session) Done() <-chan struct{} { return s.donec }

// Close stops the keepalive, waits for it, and revokes the lease (so that
// a standby takes over at once), giving up after the TTL, when the lease
// has expired anyway.
func (s *Session) Close() error {
	s.cancel()
	<-s.donec
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), time.Duration(s.ttl)*time.Second)
	defer cancel()
	_, err := s.store.Revoke(ctx, s.id)
	return err
}

// Election is one candidate's part in the election under a prefix.
type Election struct {
	session *Session
	prefix  string

	// mu protects the fields below.
	mu  sync.Mutex
	key string // empty while not campaigning or after Resign
	rev int64  // the key's CreateRevision
}

// NewElection returns a candidate in the election under prefix, for
// session. Its key is prefix + the lease ID in hex; a "/" is added to
// prefix unless it ends with one (etcd's concurrency.NewElection always
// adds one: give it the prefix without its "/").
func NewElection(s *Session, prefix string) *Election {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Election{session: s, prefix: prefix}
}

// Campaign puts this candidate's key (or takes over the one its lease
// already holds) with value val and blocks until it leads: until every
// key created before it under the prefix is gone. If ctx ends first, the
// key is deleted and Campaign answers ctx's error.
func (e *Election) Campaign(ctx context.Context, val string) error {
	st := e.session.store
	key := fmt.Sprintf("%s%x", e.prefix, e.session.Lease())
	resp, err := st.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, val, clientv3.WithLease(e.session.Lease()))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return err
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		rev = kv.CreateRevision
	}
	e.mu.Lock()
	e.key, e.rev = key, rev
	e.mu.Unlock()
	if !resp.Succeeded && string(resp.Responses[0].GetResponseRange().Kvs[0].Value) != val {
		if err := e.Proclaim(ctx, val); err != nil {
			e.resignAfter(ctx)
			return err
		}
	}
	if err := waitPredecessors(ctx, st, e.prefix, rev-1); err != nil {
		if ctx.Err() != nil {
			e.resignAfter(ctx)
		} else {
			e.mu.Lock()
			e.key = ""
			e.mu.Unlock()
		}
		return err
	}
	return nil
}

// resignAfter deletes the key after ctx ended, within the session's TTL.
func (e *Election) resignAfter(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(e.session.ttl)*time.Second)
	defer cancel()
	e.Resign(rctx)
}

// Proclaim sets the leader's value without an election.
func (e *Election) Proclaim(ctx context.Context, val string) error {
	e.mu.Lock()
	key, rev := e.key, e.rev
	e.mu.Unlock()
	if key == "" {
		return ErrElectionNotLeader
	}
	resp, err := e.session.store.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, val, clientv3.WithLease(e.session.Lease()))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		e.mu.Lock()
		e.key = ""
		e.mu.Unlock()
		return ErrElectionNotLeader
	}
	return nil
}

// Resign deletes this candidate's key if it is still the one it created,
// which ends its leadership (or its candidacy).
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	key, rev := e.key, e.rev
	e.key = ""
	e.mu.Unlock()
	if key == "" {
		return nil
	}
	_, err := e.session.store.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}

// Key is this candidate's key; empty when it is not campaigning.
func (e *Election) Key() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.key
}

// Rev is the CreateRevision of this candidate's key: a write of the
// leader is guarded by CreateRevision(Key()) == Rev().
func (e *Election) Rev() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rev
}

// waitPredecessors returns once no key under prefix has a CreateRevision
// at or below maxRev: it waits for the deletion of the newest such key,
// then looks again.
func waitPredecessors(ctx context.Context, st Store, prefix string, maxRev int64) error {
	opts := append(clientv3.WithLastCreate(), clientv3.WithPrefix(), clientv3.WithMaxCreateRev(maxRev))
	for {
		resp, err := st.Get(ctx, prefix, opts...)
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := waitDelete(ctx, st, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitDelete waits for key's deletion at or after rev.
func waitDelete(ctx context.Context, st Store, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range st.Watch(wctx, key, clientv3.WithRev(rev)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("meta: election: the watch for the predecessor's deletion ended")
}
