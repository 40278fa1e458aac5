package tabletserver

import (
	"context"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
)

// localStream is both ends of one in-process streaming call (inprocess.go):
// the caller's grpc.ClientStream, and, as localServerStream, the
// handler's grpc.ServerStream. Messages go through channels, cloned by
// the sender.
type localStream struct {
	ctx  context.Context // the caller's
	sctx context.Context // the handler's
	ts   *localTransport

	reqs      chan proto.Message // caller -> handler; closed by CloseSend
	closeSend sync.Once
	out       chan any // handler -> caller (a proto.Message or encodedRows); closed when the handler returns
	final     error    // the handler's status; written before out is closed
}

// callerError is the error of a call whose caller's context ended: its
// code (CANCELED or DEADLINE_EXCEEDED), as gRPC reports it.
func callerError(ctx context.Context) error { return status.FromContextError(ctx.Err()).Err() }

// SendMsg sends a clone of m to the handler.
func (st *localStream) SendMsg(m any) error {
	pm := m.(proto.Message)
	if n := proto.Size(pm); n > maxMessageBytes {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, maxMessageBytes)
	}
	c := cloneMessage(pm)
	select {
	case st.reqs <- c:
		return nil
	case <-st.ctx.Done():
		return callerError(st.ctx)
	}
}

// CloseSend tells the handler that no more requests come.
func (st *localStream) CloseSend() error {
	st.closeSend.Do(func() { close(st.reqs) })
	return nil
}

// RecvMsg takes the handler's next message into m; after the last, it
// returns io.EOF, or the handler's error.
func (st *localStream) RecvMsg(m any) error {
	if st.ctx.Err() != nil {
		return callerError(st.ctx)
	}
	select {
	case r, ok := <-st.out:
		if !ok {
			if st.final != nil {
				return st.final
			}
			return io.EOF
		}
		return receive(m, r)
	case <-st.ctx.Done():
		return callerError(st.ctx)
	}
}

// encodedRows is a scan's message of rows already encoded
// (convert.RowsMessage), handed over without a copy: the handler gave its
// bytes up.
type encodedRows []byte

// receive gives r, what the handler sent, to m, what the caller receives
// into: a message of encoded rows is decoded into a convert.ScanResponse
// (as the client's codec does) or unmarshalled into a message; a message
// is moved into a message of its type, or handed to a ScanResponse as its
// Parts, which the client's joiner takes whole or in parts alike.
func receive(m any, r any) error {
	switch r := r.(type) {
	case encodedRows:
		if sr, ok := m.(*convert.ScanResponse); ok {
			return sr.Decode(r)
		}
		return proto.Unmarshal(r, m.(proto.Message))
	case *tabulapb.ReadRowsResponse:
		if sr, ok := m.(*convert.ScanResponse); ok {
			sr.Rows, sr.Parts = nil, r
			return nil
		}
	}
	moveInto(m.(proto.Message), r.(proto.Message))
	return nil
}

// Header waits for the handler's header (sent with its first message, or
// when it returns).
func (st *localStream) Header() (metadata.MD, error) {
	select {
	case <-st.ts.headerSent:
		return st.ts.headerMD(), nil
	case <-st.ctx.Done():
		return nil, callerError(st.ctx)
	}
}

// Trailer is the handler's trailer, once RecvMsg has returned an error.
func (st *localStream) Trailer() metadata.MD { return st.ts.trailerMD() }

func (st *localStream) Context() context.Context { return st.ctx }

// localServerStream is the handler's side of a localStream.
type localServerStream localStream

func (ss *localServerStream) Context() context.Context { return ss.sctx }

// SendMsg sends a clone of m to the caller, waiting while the caller is
// localStreamBuffer messages behind, and fails once the call has ended.
func (ss *localServerStream) SendMsg(m any) error {
	var c any
	if rm, ok := m.(*convert.RowsMessage); ok {
		b := rm.Encoded()
		if n := len(b); n > maxMessageBytes {
			return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, maxMessageBytes)
		}
		c = encodedRows(b)
	} else {
		pm := m.(proto.Message)
		if n := proto.Size(pm); n > maxMessageBytes {
			return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, maxMessageBytes)
		}
		c = cloneMessage(pm)
	}
	if ss.sctx.Err() != nil {
		return callerError(ss.sctx)
	}
	ss.ts.sendHeader()
	select {
	case ss.out <- c:
		return nil
	case <-ss.sctx.Done():
		return callerError(ss.sctx)
	}
}

// RecvMsg takes the caller's next request into m, or returns io.EOF once
// the caller has closed its side.
func (ss *localServerStream) RecvMsg(m any) error {
	select {
	case r, ok := <-ss.reqs:
		if !ok {
			return io.EOF
		}
		moveInto(m.(proto.Message), r)
		return nil
	case <-ss.sctx.Done():
		return callerError(ss.sctx)
	}
}

func (ss *localServerStream) SetHeader(md metadata.MD) error  { return ss.ts.SetHeader(md) }
func (ss *localServerStream) SendHeader(md metadata.MD) error { return ss.ts.SendHeader(md) }
func (ss *localServerStream) SetTrailer(md metadata.MD)       { ss.ts.SetTrailer(md) }

// localTransport is the grpc.ServerTransportStream of an in-process call
// (grpc.Method, grpc.SetHeader and grpc.SetTrailer in a handler use it):
// it keeps the header and trailer for the caller.
type localTransport struct {
	method     string
	headerSent chan struct{} // closed when the header is sent; nil for a unary call

	mu       sync.Mutex
	header   metadata.MD
	trailer  metadata.MD
	sentOnce bool
}

var _ grpc.ServerTransportStream = (*localTransport)(nil)

func (t *localTransport) Method() string { return t.method }

func (t *localTransport) SetHeader(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sentOnce {
		return status.Error(codes.Internal, "transport: the header was already sent")
	}
	t.header = metadata.Join(t.header, md)
	return nil
}

func (t *localTransport) SendHeader(md metadata.MD) error {
	if err := t.SetHeader(md); err != nil {
		return err
	}
	t.sendHeader()
	return nil
}

func (t *localTransport) SetTrailer(md metadata.MD) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trailer = metadata.Join(t.trailer, md)
	return nil
}

// sendHeader marks the header sent (once).
func (t *localTransport) sendHeader() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sentOnce {
		t.sentOnce = true
		if t.headerSent != nil {
			close(t.headerSent)
		}
	}
}

func (t *localTransport) headerMD() metadata.MD {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.header.Copy()
}

func (t *localTransport) trailerMD() metadata.MD {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.trailer.Copy()
}

// deliver hands a unary call's header and trailer to the grpc.Header and
// grpc.Trailer call options among opts.
func (t *localTransport) deliver(opts []grpc.CallOption) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = t.headerMD()
		case grpc.TrailerCallOption:
			*o.TrailerAddr = t.trailerMD()
		}
	}
}

// localCalls tracks the in-process calls in flight, so that Close drains
// them along with the gRPC ones (lifecycle.go): after drain begins, new
// calls are refused with UNAVAILABLE, and drain returns once the last
// call in flight has; stop cancels the contexts of those still running,
// as grpc.Server.Stop does. The zero value is ready to use.
type localCalls struct {
	once   sync.Once
	ctx    context.Context // parent of every in-process handler's context
	cancel context.CancelFunc

	mu       sync.Mutex
	n        int
	total    int64 // calls admitted, ever
	draining bool
	drained  chan struct{} // closed when draining and n is 0
}

func (l *localCalls) init() {
	l.once.Do(func() {
		l.ctx, l.cancel = context.WithCancel(context.Background())
		l.drained = make(chan struct{})
	})
}

// begin admits a call, returning its handler's parent context, or false
// once the server is closing.
func (l *localCalls) begin() (context.Context, bool) {
	l.init()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.draining {
		return nil, false
	}
	l.n++
	l.total++
	return l.ctx, true
}

// count returns how many calls begin admitted.
func (l *localCalls) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// end ends a call begin admitted.
func (l *localCalls) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.draining && l.n == 0 {
		close(l.drained)
	}
}

// drain refuses new calls and waits for those in flight.
func (l *localCalls) drain() {
	l.init()
	l.mu.Lock()
	if !l.draining {
		l.draining = true
		if l.n == 0 {
			close(l.drained)
		}
	}
	l.mu.Unlock()
	<-l.drained
}

// stop cancels the calls in flight.
func (l *localCalls) stop() {
	l.init()
	l.cancel()
}
