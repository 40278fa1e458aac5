package memstore

import (
	"context"
	"maps"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
)

// Watches, answered as etcd's watch RPC (pb.WatchClient), which
// clientv3.NewWatchFromWatchClient turns into a clientv3.Watcher: its own
// code groups watches into streams by the context's metadata, answers
// RequestProgress on the stream of its context, closes a watch's channel
// when its context ends and builds WatchResponse.Err().
//
// On the twin's side a stream's requests are handled at once under the
// store's lock, and its answers queue without bound (stream.go), in
// revision order: a watch created from an old revision first gets the
// logged events from there (history is never compacted), then every new
// revision's, one response per revision, so a transaction's events arrive
// together. A progress request is answered after every event queued
// before it, with the current revision (WatchId -1, which clientv3 hands
// to every watch of the stream), as etcd answers when its watchers are in
// sync. Periodic progress notification (WithProgressNotify) is not
// supported: such a watch is cancelled with a reason that says so.

type watchServer struct{ s *Store }

var _ pb.WatchClient = watchServer{}

// watchStream is one gRPC watch stream and its watches.
type watchStream struct {
	*stream[pb.WatchRequest, pb.WatchResponse]
	s *Store
	// guarded by s.mu:
	watches map[int64]*watch
	lastID  int64
}

type watch struct {
	id           int64
	key, end     []byte
	from         int64 // the first revision it reports
	prevKV       bool
	noPut, noDel bool
}

func (w watchServer) Watch(ctx context.Context, _ ...grpc.CallOption) (grpc.BidiStreamingClient[pb.WatchRequest, pb.WatchResponse], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := w.s
	ws := &watchStream{s: s, watches: map[int64]*watch{}, lastID: -1}
	ws.stream = newStream[pb.WatchRequest, pb.WatchResponse](ctx, ws.handle)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.streams[ws] = true
	return ws, nil
}

// handle serves one request of the stream.
func (ws *watchStream) handle(req *pb.WatchRequest) error {
	s := ws.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	switch r := req.RequestUnion.(type) {
	case *pb.WatchRequest_CreateRequest:
		ws.createLocked(r.CreateRequest)
	case *pb.WatchRequest_CancelRequest:
		id := r.CancelRequest.WatchId
		if _, ok := ws.watches[id]; ok {
			delete(ws.watches, id)
			ws.push(&pb.WatchResponse{Header: s.headerLocked(), WatchId: id, Canceled: true})
		}
	case *pb.WatchRequest_ProgressRequest:
		ws.push(&pb.WatchResponse{Header: s.headerLocked(), WatchId: -1})
	}
	return nil
}

func (ws *watchStream) createLocked(req *pb.WatchCreateRequest) {
	s := ws.s
	ws.lastID++
	id := ws.lastID
	if req.ProgressNotify {
		ws.push(&pb.WatchResponse{Header: s.headerLocked(), WatchId: id, Created: true, Canceled: true,
			CancelReason: unsupported("periodic progress notification (WithProgressNotify)").Error()})
		return
	}
	w := &watch{id: id, key: req.Key, end: req.RangeEnd, from: req.StartRevision, prevKV: req.PrevKv}
	for _, f := range req.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			w.noPut = true
		case pb.WatchCreateRequest_NODELETE:
			w.noDel = true
		}
	}
	if w.from <= 0 {
		w.from = s.kv.rev + 1
	}
	ws.watches[id] = w
	ws.push(&pb.WatchResponse{Header: s.headerLocked(), WatchId: id, Created: true})
	for _, re := range s.kv.eventsSince(w.from) {
		ws.sendLocked(w, re)
	}
}

// dispatchLocked hands a new revision's events to the stream's watches.
func (ws *watchStream) dispatchLocked(re revEvents) {
	if ws.ctx.Err() != nil {
		delete(ws.s.streams, ws) // clientv3 ended the stream
		return
	}
	for _, id := range slices.Sorted(maps.Keys(ws.watches)) {
		if w := ws.watches[id]; re.rev >= w.from {
			ws.sendLocked(w, re)
		}
	}
}

// sendLocked queues the events of re that w wants, if any.
func (ws *watchStream) sendLocked(w *watch, re revEvents) {
	var evs []*mvccpb.Event
	for _, ev := range re.events {
		if !inRange(ev.Kv.Key, w.key, w.end) ||
			(ev.Type == mvccpb.PUT && w.noPut) || (ev.Type == mvccpb.DELETE && w.noDel) {
			continue
		}
		out := &mvccpb.Event{Type: ev.Type, Kv: cloneKV(ev.Kv, false)}
		if w.prevKV {
			out.PrevKv = cloneKV(ev.PrevKv, false)
		}
		evs = append(evs, out)
	}
	if len(evs) > 0 {
		ws.push(&pb.WatchResponse{Header: &pb.ResponseHeader{Revision: re.rev}, WatchId: w.id, Events: evs})
	}
}
