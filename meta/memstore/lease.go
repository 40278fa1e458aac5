package memstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// Leases, answered as etcd's lease RPCs (pb.LeaseClient), which
// clientv3.NewLeaseFromLeaseClient turns into a clientv3.Lease: its own
// keepalive loop (a renewal every third of the TTL, the channel closed
// when the lease is gone), KeepAliveOnce (rpctypes.ErrLeaseNotFound for a
// gone lease) and error translation run unchanged.
//
// Like etcd: a lease lives at least minLeaseTTL; TimeToLive answers the
// remaining time truncated to whole seconds, and TTL -1 for a lease it
// does not have (see meta.LeaseGone); Revoke and expiry delete the keys
// bound to the lease in one revision, with a delete event for each; a
// renewal of a gone lease answers TTL 0.

const (
	// minLeaseTTL is a default etcd member's shortest lease, in seconds:
	// 1.5 election timeouts of 1 s, rounded up.
	minLeaseTTL = 2
	// maxLeaseTTL is etcd's longest, in seconds.
	maxLeaseTTL = 9_000_000_000
)

type lease struct {
	id, ttl  int64
	deadline time.Time
}

type leaseServer struct{ s *Store }

var _ pb.LeaseClient = leaseServer{}

func (l leaseServer) LeaseGrant(ctx context.Context, req *pb.LeaseGrantRequest, _ ...grpc.CallOption) (*pb.LeaseGrantResponse, error) {
	s := l.s
	return call(ctx, s, func() (*pb.LeaseGrantResponse, error) {
		if req.TTL > maxLeaseTTL {
			return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
		}
		id := req.ID
		if id == 0 {
			s.lastLease++
			id = s.lastLease
		}
		if _, ok := s.leases[id]; ok {
			return nil, rpctypes.ErrGRPCLeaseExist
		}
		ttl := max(req.TTL, minLeaseTTL)
		s.leases[id] = &lease{id: id, ttl: ttl, deadline: s.now().Add(time.Duration(ttl) * time.Second)}
		s.kv.attached[id] = map[string]bool{}
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return &pb.LeaseGrantResponse{Header: s.headerLocked(), ID: id, TTL: ttl}, nil
	})
}

func (l leaseServer) LeaseRevoke(ctx context.Context, req *pb.LeaseRevokeRequest, _ ...grpc.CallOption) (*pb.LeaseRevokeResponse, error) {
	s := l.s
	return call(ctx, s, func() (*pb.LeaseRevokeResponse, error) {
		if _, ok := s.leases[req.ID]; !ok {
			return nil, rpctypes.ErrGRPCLeaseNotFound
		}
		s.revokeLocked(req.ID)
		return &pb.LeaseRevokeResponse{Header: s.headerLocked()}, nil
	})
}

func (l leaseServer) LeaseTimeToLive(ctx context.Context, req *pb.LeaseTimeToLiveRequest, _ ...grpc.CallOption) (*pb.LeaseTimeToLiveResponse, error) {
	s := l.s
	return call(ctx, s, func() (*pb.LeaseTimeToLiveResponse, error) {
		le, ok := s.leases[req.ID]
		if !ok {
			return &pb.LeaseTimeToLiveResponse{Header: s.headerLocked(), ID: req.ID, TTL: -1}, nil
		}
		resp := &pb.LeaseTimeToLiveResponse{Header: s.headerLocked(), ID: le.id, GrantedTTL: le.ttl,
			TTL: int64(le.deadline.Sub(s.now()).Seconds())}
		if req.Keys {
			for _, k := range slices.Sorted(maps.Keys(s.kv.attached[le.id])) {
				resp.Keys = append(resp.Keys, []byte(k))
			}
		}
		return resp, nil
	})
}

func (l leaseServer) LeaseLeases(ctx context.Context, _ *pb.LeaseLeasesRequest, _ ...grpc.CallOption) (*pb.LeaseLeasesResponse, error) {
	s := l.s
	return call(ctx, s, func() (*pb.LeaseLeasesResponse, error) {
		resp := &pb.LeaseLeasesResponse{Header: s.headerLocked()}
		for _, id := range slices.Sorted(maps.Keys(s.leases)) {
			resp.Leases = append(resp.Leases, &pb.LeaseStatus{ID: id})
		}
		return resp, nil
	})
}

// LeaseKeepAlive opens a keepalive stream: each request renews its lease
// and queues the answer.
func (l leaseServer) LeaseKeepAlive(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var st *stream[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]
	st = newStream[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse](ctx, func(req *pb.LeaseKeepAliveRequest) error {
		st.push(l.s.renew(req.ID))
		return nil
	})
	return st, nil
}

// renew moves lease id's deadline a TTL from now; TTL 0 if it is gone.
func (s *Store) renew(id int64) *pb.LeaseKeepAliveResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &pb.LeaseKeepAliveResponse{Header: s.headerLocked(), ID: id}
	}
	s.expireLocked()
	le, ok := s.leases[id]
	if !ok {
		return &pb.LeaseKeepAliveResponse{Header: s.headerLocked(), ID: id}
	}
	le.deadline = s.now().Add(time.Duration(le.ttl) * time.Second)
	return &pb.LeaseKeepAliveResponse{Header: s.headerLocked(), ID: id, TTL: le.ttl}
}

// revokeLocked ends lease id and deletes its keys in one revision.
func (s *Store) revokeLocked(id int64) {
	for _, k := range slices.Sorted(maps.Keys(s.kv.attached[id])) {
		s.kv.deleteKey(s.kv.latest(k, 0))
	}
	delete(s.leases, id)
	delete(s.kv.attached, id)
	s.commitLocked()
}

// expireLocked revokes every lease whose deadline has passed, oldest
// deadline first.
func (s *Store) expireLocked() {
	now := s.now()
	var gone []*lease
	for _, le := range s.leases {
		if !le.deadline.After(now) {
			gone = append(gone, le)
		}
	}
	slices.SortFunc(gone, func(a, b *lease) int { return cmp.Or(a.deadline.Compare(b.deadline), cmp.Compare(a.id, b.id)) })
	for _, le := range gone {
		s.revokeLocked(le.id)
	}
}

// nextDeadlineLocked is the earliest lease deadline; zero if none.
func (s *Store) nextDeadlineLocked() time.Time {
	var next time.Time
	for _, le := range s.leases {
		if next.IsZero() || le.deadline.Before(next) {
			next = le.deadline
		}
	}
	return next
}
