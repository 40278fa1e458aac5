package memstore

import (
	"bytes"
	"cmp"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Transactions: If(compares) Then(ops) Else(ops), applied at one revision
// under the store's lock, as etcd applies them. The compares Tabula writes
// are on Value, Version, CreateRevision, ModRevision and Lease with = != <
// >; an op is a Get, a Put or a Delete. Nested transactions are not
// supported. Like etcd, a transaction may not write one key twice.

// maxTxnOps is etcd's default --max-txn-ops.
const maxTxnOps = 128

// txnLocked evaluates req's compares and applies the branch they choose.
func (s *Store) txnLocked(req *pb.TxnRequest) (*pb.TxnResponse, error) {
	ok := true
	for _, c := range req.Compare {
		match, err := s.compareLocked(c)
		if err != nil {
			return nil, err
		}
		ok = ok && match
	}
	ops := req.Success
	if !ok {
		ops = req.Failure
	}
	if len(req.Success) > maxTxnOps || len(req.Failure) > maxTxnOps {
		return nil, rpctypes.ErrGRPCTooManyOps
	}
	// etcd refuses a bad branch even when the other one runs.
	for _, branch := range [][]*pb.RequestOp{req.Success, req.Failure} {
		if err := checkWrites(branch); err != nil {
			return nil, err
		}
	}
	resp := &pb.TxnResponse{Succeeded: ok}
	for _, op := range ops {
		r, err := s.applyOpLocked(op)
		if err != nil {
			s.kv.pending = nil // nothing of a failed transaction happens
			return nil, err
		}
		resp.Responses = append(resp.Responses, r)
	}
	s.commitLocked()
	for _, r := range resp.Responses {
		setHeader(r, s.headerLocked())
	}
	return resp, nil
}

// applyOpLocked applies one op of a transaction's chosen branch.
func (s *Store) applyOpLocked(op *pb.RequestOp) (*pb.ResponseOp, error) {
	switch r := op.Request.(type) {
	case *pb.RequestOp_RequestRange:
		// A read in a transaction sees the transaction's earlier writes.
		if r.RequestRange.Revision != 0 {
			return nil, unsupported("a historical read inside a transaction")
		}
		resp, err := s.rangeLocked(r.RequestRange)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: resp}}, nil
	case *pb.RequestOp_RequestPut:
		resp, err := s.kv.put(r.RequestPut)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: resp}}, nil
	case *pb.RequestOp_RequestDeleteRange:
		resp := s.kv.deleteRange(r.RequestDeleteRange)
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: resp}}, nil
	}
	return nil, unsupported("a nested transaction")
}

// setHeader gives a transaction's answer to one op the header of the
// whole transaction.
func setHeader(r *pb.ResponseOp, h *pb.ResponseHeader) {
	switch r := r.Response.(type) {
	case *pb.ResponseOp_ResponseRange:
		r.ResponseRange.Header = h
	case *pb.ResponseOp_ResponsePut:
		r.ResponsePut.Header = h
	case *pb.ResponseOp_ResponseDeleteRange:
		r.ResponseDeleteRange.Header = h
	}
}

// checkWrites refuses a branch that writes one key twice (two puts, or a
// put inside a deleted range), or names an empty key, as etcd does.
func checkWrites(ops []*pb.RequestOp) error {
	var puts [][]byte
	var dels []*pb.DeleteRangeRequest
	for _, op := range ops {
		switch r := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			if len(r.RequestRange.Key) == 0 {
				return rpctypes.ErrGRPCEmptyKey
			}
		case *pb.RequestOp_RequestPut:
			if len(r.RequestPut.Key) == 0 {
				return rpctypes.ErrGRPCEmptyKey
			}
			for _, k := range puts {
				if bytes.Equal(k, r.RequestPut.Key) {
					return rpctypes.ErrGRPCDuplicateKey
				}
			}
			puts = append(puts, r.RequestPut.Key)
		case *pb.RequestOp_RequestDeleteRange:
			if len(r.RequestDeleteRange.Key) == 0 {
				return rpctypes.ErrGRPCEmptyKey
			}
			dels = append(dels, r.RequestDeleteRange)
		case *pb.RequestOp_RequestTxn:
			return unsupported("a nested transaction")
		}
	}
	for _, d := range dels {
		for _, k := range puts {
			if inRange(k, d.Key, d.RangeEnd) {
				return rpctypes.ErrGRPCDuplicateKey
			}
		}
	}
	return nil
}

// compareLocked evaluates one compare as etcd does: over every live key of
// its range; a missing key compares as zero revisions, version and lease,
// and fails every compare of its value.
func (s *Store) compareLocked(c *pb.Compare) (bool, error) {
	kvs := s.kv.rangeAt(c.Key, c.RangeEnd, 0)
	if len(kvs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false, nil
		}
		return compareKV(c, &mvccpb.KeyValue{})
	}
	for _, kv := range kvs {
		ok, err := compareKV(c, kv)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func compareKV(c *pb.Compare, kv *mvccpb.KeyValue) (bool, error) {
	var r int
	switch c.Target {
	case pb.Compare_VALUE:
		r = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_VERSION:
		r = cmp.Compare(kv.Version, c.GetVersion())
	case pb.Compare_CREATE:
		r = cmp.Compare(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		r = cmp.Compare(kv.ModRevision, c.GetModRevision())
	case pb.Compare_LEASE:
		r = cmp.Compare(kv.Lease, c.GetLease())
	default:
		return false, unsupported("compare target " + c.Target.String())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return r == 0, nil
	case pb.Compare_NOT_EQUAL:
		return r != 0, nil
	case pb.Compare_GREATER:
		return r > 0, nil
	case pb.Compare_LESS:
		return r < 0, nil
	}
	return false, unsupported("compare result " + c.Result.String())
}
