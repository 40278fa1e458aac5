package memstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrClosed is what calls on a closed Store answer.
var ErrClosed = errors.New("memstore: store closed")

// unsupported is the error of an option or an operation the twin does not
// implement: it refuses it rather than do something else than etcd.
func unsupported(what string) error {
	return fmt.Errorf("memstore: %s is not supported: %w", what, errors.ErrUnsupported)
}

// Options configure a Store.
type Options struct {
	// Clock times the leases; a test moves it with Advance to make leases
	// expire. Keepalives still run on real time (every third of the TTL,
	// as clientv3's), so an Advance past a lease's TTL expires it as a
	// stalled keepalive loop would. The default is the real clock, on
	// which leases expire by themselves and keepalives keep them.
	Clock *ManualClock
}

// Store is the in-memory twin of an etcd cluster; it implements
// meta.Store (clientv3.KV, clientv3.Lease and clientv3.Watcher). Safe for
// concurrent use; Close it when done.
type Store struct {
	clientv3.KV
	clientv3.Lease
	clientv3.Watcher

	base  *clientv3.Client // no connection: a logger and a context for the client halves
	clock *ManualClock     // nil: real time
	kick  chan struct{}    // wakes the expiry loop after a grant
	done  chan struct{}    // closed by Close
	wg    sync.WaitGroup   // the expiry loop
	once  sync.Once

	// mu protects the fields below.
	mu        sync.Mutex
	kv        *mvcc
	leases    map[int64]*lease
	lastLease int64
	streams   map[*watchStream]bool
	closed    bool
}

// New returns an empty store at revision 1.
func New(opts Options) *Store {
	s := &Store{
		base:    clientv3.NewCtxClient(context.Background()),
		clock:   opts.Clock,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		kv:      newMVCC(),
		leases:  map[int64]*lease{},
		streams: map[*watchStream]bool{},
		// Lease IDs look like etcd's: large, and printed in hex in election keys.
		lastLease: 0x7a11_0000_0000_0000,
	}
	s.KV = clientv3.NewKVFromKVClient(kvServer{s}, s.base)
	s.Lease = clientv3.NewLeaseFromLeaseClient(leaseServer{s}, s.base, 0)
	s.Watcher = clientv3.NewWatchFromWatchClient(watchServer{s}, s.base)
	if s.clock != nil {
		s.clock.subscribe(s)
	} else {
		s.wg.Add(1)
		go s.expiryLoop()
	}
	return s
}

// Close stops the store's keepalives, watches and expiry loop. It is
// idempotent.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.Watcher.Close()
		s.Lease.Close()
		s.mu.Lock()
		s.closed = true
		for st := range s.streams {
			st.close()
		}
		s.mu.Unlock()
		if s.clock != nil {
			s.clock.unsubscribe(s)
		}
		close(s.done)
		s.wg.Wait()
		s.base.Close()
	})
	return nil
}

// Rev returns the store's current revision.
func (s *Store) Rev() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv.rev
}

// call runs one RPC: it answers ctx's error if ctx has ended, else runs f
// under the store's lock once the leases whose time ran out are revoked.
func call[R any](ctx context.Context, s *Store, f func() (R, error)) (R, error) {
	if err := ctx.Err(); err != nil {
		var zero R
		return zero, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		var zero R
		return zero, ErrClosed
	}
	s.expireLocked()
	return f()
}

func (s *Store) headerLocked() *pb.ResponseHeader {
	return &pb.ResponseHeader{Revision: s.kv.rev}
}

// commitLocked ends a write: if it changed anything, the revision moves
// on and the watchers get its events.
func (s *Store) commitLocked() {
	re, ok := s.kv.commit()
	if !ok {
		return
	}
	for st := range s.streams {
		st.dispatchLocked(re)
	}
}

func (s *Store) now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

// expiryLoop revokes leases when they expire on real time.
func (s *Store) expiryLoop() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		s.expireLocked()
		next := s.nextDeadlineLocked()
		s.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-s.kick:
		case <-s.done:
			return
		}
	}
}

// expire revokes the leases whose time ran out (ManualClock.Advance).
func (s *Store) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
}
