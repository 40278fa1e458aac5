package gateway

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
)

// maxOperations bounds the operations a gateway remembers: the oldest is
// forgotten first (GetOperation of it answers NOT_FOUND).
const maxOperations = 1000

// operations serves google.longrunning.Operations for the operations this
// gateway returned (UpdateTable, CreateInstance, CreateBackup,
// RestoreTable): every one is done when its call returns, so the service
// only answers them again for the clients that poll (WaitForCompletion,
// op.Wait). They live in this process's memory: another gateway, or this
// one after a restart, answers NOT_FOUND.
type operations struct {
	longrunningpb.UnimplementedOperationsServer

	mu    sync.Mutex
	byKey map[string]*longrunningpb.Operation
	// order is the names, oldest first; a name kept again moves to the end.
	order []string
}

// keep remembers op, forgetting the oldest beyond maxOperations.
func (o *operations) keep(op *longrunningpb.Operation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byKey == nil {
		o.byKey = map[string]*longrunningpb.Operation{}
	}
	if _, ok := o.byKey[op.GetName()]; ok {
		o.order = removeName(o.order, op.GetName())
	}
	o.byKey[op.GetName()] = proto.Clone(op).(*longrunningpb.Operation)
	o.order = append(o.order, op.GetName())
	for len(o.order) > maxOperations {
		delete(o.byKey, o.order[0])
		o.order = o.order[1:]
	}
}

func removeName(names []string, name string) []string {
	for i, n := range names {
		if n == name {
			return append(names[:i], names[i+1:]...)
		}
	}
	return names
}

// GetOperation answers an operation this gateway returned.
func (o *operations) GetOperation(_ context.Context, req *longrunningpb.GetOperationRequest) (*longrunningpb.Operation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	op, ok := o.byKey[req.GetName()]
	if !ok {
		return nil, notFoundf("operation %q is unknown to this gateway: it keeps the last %d operations it returned, in memory", req.GetName(), maxOperations)
	}
	return proto.Clone(op).(*longrunningpb.Operation), nil
}

// ListOperations lists the remembered operations whose names begin with
// name (all when it is empty or "operations"), oldest first; page_token
// is the position to go on from.
func (o *operations) ListOperations(_ context.Context, req *longrunningpb.ListOperationsRequest) (*longrunningpb.ListOperationsResponse, error) {
	if req.GetFilter() != "" {
		return nil, unimplemented("ListOperations with a filter", "every operation it lists is done")
	}
	if req.GetPageSize() < 0 {
		return nil, invalidf("page_size must be >= 0, got %d", req.GetPageSize())
	}
	start := 0
	if t := req.GetPageToken(); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return nil, invalidf("page_token %q was not returned by ListOperations", t)
		}
		start = n
	}
	prefix := req.GetName()
	if prefix == "operations" {
		prefix = ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	resp := &longrunningpb.ListOperationsResponse{}
	for i := start; i < len(o.order); i++ {
		if !strings.HasPrefix(o.order[i], prefix) {
			continue
		}
		if ps := int(req.GetPageSize()); ps > 0 && len(resp.Operations) == ps {
			resp.NextPageToken = strconv.Itoa(i)
			break
		}
		resp.Operations = append(resp.Operations, proto.Clone(o.byKey[o.order[i]]).(*longrunningpb.Operation))
	}
	return resp, nil
}

// DeleteOperation forgets an operation.
func (o *operations) DeleteOperation(_ context.Context, req *longrunningpb.DeleteOperationRequest) (*emptypb.Empty, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.byKey[req.GetName()]; !ok {
		return nil, notFoundf("operation %q is unknown to this gateway", req.GetName())
	}
	delete(o.byKey, req.GetName())
	o.order = removeName(o.order, req.GetName())
	return &emptypb.Empty{}, nil
}

// CancelOperation has nothing to cancel: every operation is done.
func (o *operations) CancelOperation(ctx context.Context, req *longrunningpb.CancelOperationRequest) (*emptypb.Empty, error) {
	if _, err := o.GetOperation(ctx, &longrunningpb.GetOperationRequest{Name: req.GetName()}); err != nil {
		return nil, err
	}
	return nil, status.Errorf(codes.FailedPrecondition, "operation %q is done: nothing to cancel", req.GetName())
}

// WaitOperation answers at once: every operation is done.
func (o *operations) WaitOperation(ctx context.Context, req *longrunningpb.WaitOperationRequest) (*longrunningpb.Operation, error) {
	return o.GetOperation(ctx, &longrunningpb.GetOperationRequest{Name: req.GetName()})
}
