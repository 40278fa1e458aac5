package memstore

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// kvServer answers etcd's KV RPCs (pb.KVClient) from the twin's key
// space. clientv3.NewKVFromKVClient turns it into a clientv3.KV, so the
// client's own code builds the requests from Ops (their lease, sort and
// ignore options are not readable from an Op) and translates errors, as
// it does for a real etcd.
type kvServer struct{ s *Store }

var _ pb.KVClient = kvServer{}

func (k kvServer) Range(ctx context.Context, req *pb.RangeRequest, _ ...grpc.CallOption) (*pb.RangeResponse, error) {
	return call(ctx, k.s, func() (*pb.RangeResponse, error) {
		resp, err := k.s.rangeLocked(req)
		if err == nil {
			resp.Header = k.s.headerLocked()
		}
		return resp, err
	})
}

func (k kvServer) Put(ctx context.Context, req *pb.PutRequest, _ ...grpc.CallOption) (*pb.PutResponse, error) {
	return call(ctx, k.s, func() (*pb.PutResponse, error) {
		if len(req.Key) == 0 {
			return nil, rpctypes.ErrGRPCEmptyKey
		}
		resp, err := k.s.kv.put(req)
		if err != nil {
			k.s.kv.pending = nil
			return nil, err
		}
		k.s.commitLocked()
		resp.Header = k.s.headerLocked()
		return resp, nil
	})
}

func (k kvServer) DeleteRange(ctx context.Context, req *pb.DeleteRangeRequest, _ ...grpc.CallOption) (*pb.DeleteRangeResponse, error) {
	return call(ctx, k.s, func() (*pb.DeleteRangeResponse, error) {
		if len(req.Key) == 0 {
			return nil, rpctypes.ErrGRPCEmptyKey
		}
		resp := k.s.kv.deleteRange(req)
		k.s.commitLocked()
		resp.Header = k.s.headerLocked()
		return resp, nil
	})
}

func (k kvServer) Txn(ctx context.Context, req *pb.TxnRequest, _ ...grpc.CallOption) (*pb.TxnResponse, error) {
	return call(ctx, k.s, func() (*pb.TxnResponse, error) {
		resp, err := k.s.txnLocked(req)
		if err == nil {
			resp.Header = k.s.headerLocked()
		}
		return resp, err
	})
}

func (k kvServer) Compact(context.Context, *pb.CompactionRequest, ...grpc.CallOption) (*pb.CompactionResponse, error) {
	return nil, unsupported("compaction (the twin keeps all history)")
}

func (k kvServer) RangeStream(context.Context, *pb.RangeRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[pb.RangeStreamResponse], error) {
	return nil, unsupported("GetStream")
}

// rangeLocked answers a Get: the keys of the range at req.Revision (0:
// now), filtered, sorted and limited as etcd does; Count is the number
// before the limit, More whether the limit cut any off.
func (s *Store) rangeLocked(req *pb.RangeRequest) (*pb.RangeResponse, error) {
	if len(req.Key) == 0 {
		return nil, rpctypes.ErrGRPCEmptyKey
	}
	if req.Revision > s.kv.rev {
		return nil, rpctypes.ErrGRPCFutureRev
	}
	if req.Limit < 0 {
		return nil, unsupported("a negative limit")
	}
	kvs := s.kv.rangeAt(req.Key, req.RangeEnd, req.Revision)
	kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool {
		return (req.MinModRevision > 0 && kv.ModRevision < req.MinModRevision) ||
			(req.MaxModRevision > 0 && kv.ModRevision > req.MaxModRevision) ||
			(req.MinCreateRevision > 0 && kv.CreateRevision < req.MinCreateRevision) ||
			(req.MaxCreateRevision > 0 && kv.CreateRevision > req.MaxCreateRevision)
	})
	if err := sortKVs(kvs, req.SortTarget, req.SortOrder); err != nil {
		return nil, err
	}
	resp := &pb.RangeResponse{Count: int64(len(kvs))}
	if req.CountOnly {
		return resp, nil
	}
	if req.Limit > 0 && int64(len(kvs)) > req.Limit {
		kvs, resp.More = kvs[:req.Limit], true
	}
	for _, kv := range kvs {
		resp.Kvs = append(resp.Kvs, cloneKV(kv, req.KeysOnly))
	}
	return resp, nil
}

// sortKVs sorts kvs (sorted by key on entry) as etcd's range does: an
// order without a target sorts by key, a target without an order ascends.
func sortKVs(kvs []*mvccpb.KeyValue, target pb.RangeRequest_SortTarget, order pb.RangeRequest_SortOrder) error {
	if order == pb.RangeRequest_NONE {
		if target == pb.RangeRequest_KEY {
			return nil
		}
		order = pb.RangeRequest_ASCEND
	}
	var by func(a, b *mvccpb.KeyValue) int
	switch target {
	case pb.RangeRequest_KEY:
		by = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) }
	case pb.RangeRequest_VERSION:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.Version, b.Version) }
	case pb.RangeRequest_CREATE:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.CreateRevision, b.CreateRevision) }
	case pb.RangeRequest_MOD:
		by = func(a, b *mvccpb.KeyValue) int { return cmp.Compare(a.ModRevision, b.ModRevision) }
	case pb.RangeRequest_VALUE:
		by = func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Value, b.Value) }
	default:
		return unsupported("sort target " + target.String())
	}
	switch order {
	case pb.RangeRequest_ASCEND:
		slices.SortStableFunc(kvs, by)
	case pb.RangeRequest_DESCEND:
		slices.SortStableFunc(kvs, func(a, b *mvccpb.KeyValue) int { return by(b, a) })
	default:
		return unsupported("sort order " + order.String())
	}
	return nil
}
