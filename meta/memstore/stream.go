package memstore

import (
	"context"
	"sync"

	"google.golang.org/grpc/metadata"
)

// stream is the twin's end of a gRPC bidirectional stream (a watch or a
// lease keepalive stream), as clientv3 sees it: Send hands a request to
// the store at once, under its lock; the answers wait in an unbounded
// queue for Recv, so the store never blocks on a slow reader.
type stream[Req, Res any] struct {
	ctx    context.Context
	handle func(*Req) error

	// mu protects the fields below.
	mu     sync.Mutex
	queue  []*Res
	ready  chan struct{} // holds one token while the queue may be non-empty
	closed bool          // the store closed: Recv answers ErrClosed once drained
}

func newStream[Req, Res any](ctx context.Context, handle func(*Req) error) *stream[Req, Res] {
	return &stream[Req, Res]{ctx: ctx, handle: handle, ready: make(chan struct{}, 1)}
}

// push queues r for Recv; it never blocks.
func (st *stream[Req, Res]) push(r *Res) {
	st.mu.Lock()
	st.queue = append(st.queue, r)
	st.mu.Unlock()
	st.signal()
}

func (st *stream[Req, Res]) signal() {
	select {
	case st.ready <- struct{}{}:
	default:
	}
}

// close ends the stream: Recv answers ErrClosed after the queued answers.
func (st *stream[Req, Res]) close() {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	st.signal()
}

func (st *stream[Req, Res]) Send(r *Req) error {
	if err := st.ctx.Err(); err != nil {
		return err
	}
	return st.handle(r)
}

func (st *stream[Req, Res]) Recv() (*Res, error) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			r := st.queue[0]
			st.queue[0] = nil
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return r, nil
		}
		closed := st.closed
		st.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-st.ready:
		case <-st.ctx.Done():
			return nil, st.ctx.Err()
		}
	}
}

func (st *stream[Req, Res]) Header() (metadata.MD, error) { return nil, nil }
func (st *stream[Req, Res]) Trailer() metadata.MD         { return nil }
func (st *stream[Req, Res]) CloseSend() error             { return nil }
func (st *stream[Req, Res]) Context() context.Context     { return st.ctx }
func (st *stream[Req, Res]) SendMsg(m any) error          { return st.Send(m.(*Req)) }

func (st *stream[Req, Res]) RecvMsg(m any) error {
	return unsupported("RecvMsg on a stream")
}
