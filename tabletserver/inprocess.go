package tabletserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// LocalConn returns a connection to s for a client in the same process
// (client.Options.Local): calls run the server's handlers directly, with
// no marshalling, HTTP/2 or loopback socket, which is most of what a
// point read costs (docs/BENCHMARKS.md, "The Cloud Bigtable API: gateway
// vs native client"). Everything else a gRPC call gets happens here too:
//
//   - the same interceptors in the same order (metrics, then the auth
//     guard), so calls are counted, authenticated and authorized alike;
//   - the caller's identity is what it would present over gRPC: clientTLS
//     (nil: plaintext) must match the server's port, its certificate is
//     verified against ServerTLS as the TLS handshake would, and token
//     goes in an "authorization: Bearer" header (a call whose outgoing
//     metadata has its own "authorization" presents that one instead:
//     client.WithToken); nothing of the caller's
//     own incoming call (the Bigtable client's metadata or peer) reaches
//     the handler, which runs under a context of its own;
//   - the caller's deadline and cancellation reach the handler's context;
//   - the limits of the gRPC port: 96 MiB messages either way and
//     maxStreamsPerConn calls at once on the connection (more wait);
//   - errors reach the caller as statuses only, as gRPC sends them;
//   - Close drains in-process calls with the gRPC ones.
//
// Messages never cross shared: requests are cloned when the caller sends
// them and responses when the handler does (the server may reuse a
// response, or point it at memory it frees, once Send returns), and the
// receiving side takes the clone over. A clone costs a fraction of a
// marshal and unmarshal. Call options are ignored but for grpc.Header and
// grpc.Trailer (Tabula's client passes none).
//
// A handshake gRPC would refuse (TLS on one side only, a certificate the
// server does not accept) is refused here with UNAVAILABLE.
func (s *Server) LocalConn(clientTLS *tls.Config, token string) (grpc.ClientConnInterface, error) {
	c := &localConn{s: s, slots: make(chan struct{}, maxStreamsPerConn)}
	c.peer = &peer.Peer{Addr: localAddr{}, LocalAddr: localAddr{}}
	switch {
	case s.opts.ServerTLS == nil && clientTLS != nil:
		return nil, status.Errorf(codes.Unavailable, "tabletserver: in-process connection to %s: the client uses TLS and the server serves plaintext", s.addr)
	case s.opts.ServerTLS != nil && clientTLS == nil:
		return nil, status.Errorf(codes.Unavailable, "tabletserver: in-process connection to %s: the server needs TLS and the client uses plaintext", s.addr)
	case s.opts.ServerTLS != nil:
		state, err := verifyLocalClient(s.opts.ServerTLS, clientTLS)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "tabletserver: in-process connection to %s: %v", s.addr, err)
		}
		c.peer.AuthInfo = credentials.TLSInfo{State: state, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	}
	if token != "" {
		if clientTLS == nil {
			return nil, status.Error(codes.Unauthenticated, "tabletserver: in-process connection: a token needs TLS")
		}
		c.md = metadata.Pairs("authorization", "Bearer "+token)
	}
	return c, nil
}

// InProcessCalls returns how many calls connections from LocalConn have
// made to s: how much of its traffic skipped gRPC.
func (s *Server) InProcessCalls() int64 { return s.local.count() }

// verifyLocalClient does what the server's TLS handshake does with the
// client certificate of clientTLS: ask for it as server.ClientAuth says,
// verify it against server.ClientCAs for client authentication, and call
// server's own verification hooks. It returns the connection state the
// handler sees (peer certificates and verified chains).
func verifyLocalClient(server, clientTLS *tls.Config) (tls.ConnectionState, error) {
	state := tls.ConnectionState{HandshakeComplete: true, Version: tls.VersionTLS13}
	if server.ClientAuth == tls.NoClientCert {
		return state, nil
	}
	var cert *tls.Certificate
	switch {
	case clientTLS.GetClientCertificate != nil:
		c, err := clientTLS.GetClientCertificate(&tls.CertificateRequestInfo{Version: tls.VersionTLS13})
		if err != nil {
			return state, err
		}
		cert = c
	case len(clientTLS.Certificates) > 0:
		cert = &clientTLS.Certificates[0]
	}
	if cert == nil || len(cert.Certificate) == 0 {
		if server.ClientAuth == tls.RequireAnyClientCert || server.ClientAuth == tls.RequireAndVerifyClientCert {
			return state, errors.New("the server requires a client certificate and the client has none")
		}
		return state, nil
	}
	certs := make([]*x509.Certificate, len(cert.Certificate))
	for i, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return state, fmt.Errorf("the client certificate: %w", err)
		}
		certs[i] = c
	}
	state.PeerCertificates = certs
	if server.ClientAuth == tls.VerifyClientCertIfGiven || server.ClientAuth == tls.RequireAndVerifyClientCert {
		opts := x509.VerifyOptions{
			Roots:         server.ClientCAs,
			Intermediates: x509.NewCertPool(),
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if server.Time != nil {
			opts.CurrentTime = server.Time()
		}
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
		chains, err := certs[0].Verify(opts)
		if err != nil {
			return state, fmt.Errorf("the client certificate is not accepted: %w", err)
		}
		state.VerifiedChains = chains
	}
	if server.VerifyPeerCertificate != nil {
		if err := server.VerifyPeerCertificate(cert.Certificate, state.VerifiedChains); err != nil {
			return state, err
		}
	}
	if server.VerifyConnection != nil {
		if err := server.VerifyConnection(state); err != nil {
			return state, err
		}
	}
	return state, nil
}

// localAddr is the peer address of in-process calls (in refusal and audit
// log lines).
type localAddr struct{}

func (localAddr) Network() string { return "inprocess" }
func (localAddr) String() string  { return "in-process" }

// localMethods and localStreams are the server's methods by full name.
var localMethods, localStreams = func() (map[string]grpc.MethodDesc, map[string]grpc.StreamDesc) {
	d := tabulapb.TabletServer_ServiceDesc
	ms, ss := make(map[string]grpc.MethodDesc), make(map[string]grpc.StreamDesc)
	for _, m := range d.Methods {
		ms["/"+d.ServiceName+"/"+m.MethodName] = m
	}
	for _, st := range d.Streams {
		ss["/"+d.ServiceName+"/"+st.StreamName] = st
	}
	return ms, ss
}()

// maxMessageBytes is the largest message the gRPC port receives or sends
// (grpcServerOptions), and Tabula's client receives.
const maxMessageBytes = 96 << 20

// localStreamBuffer is how many messages a stream's handler may send
// ahead of its reader: with ReadRows's 1 MiB batches, a few MiB in flight,
// like the gRPC stream's flow-control window.
const localStreamBuffer = 4

// localConn is a connection made by LocalConn. It is safe for concurrent
// use.
type localConn struct {
	s     *Server
	peer  *peer.Peer
	md    metadata.MD   // the caller's credentials (the bearer token), if any
	slots chan struct{} // calls in flight, up to maxStreamsPerConn
}

// begin admits one call: it waits for a slot as gRPC waits for stream
// quota, and refuses calls once the server is closing. The returned
// context is the handler's, and end releases everything.
func (c *localConn) begin(ctx context.Context, method string, ts *localTransport) (sctx context.Context, end func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, status.FromContextError(err).Err()
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, status.FromContextError(ctx.Err()).Err()
	}
	base, ok := c.s.local.begin()
	if !ok {
		<-c.slots
		return nil, nil, status.Errorf(codes.Unavailable, "tabletserver: %s is shutting down", c.s.addr)
	}
	sctx, cancel := context.WithCancel(base)
	d, hasDeadline := ctx.Deadline()
	cancelDeadline := context.CancelFunc(func() {})
	if hasDeadline {
		sctx, cancelDeadline = context.WithDeadline(sctx, d)
	}
	// The caller's cancellation ends the handler's context. A deadline
	// needs no relay: the handler's context has the same one, and so ends
	// with DEADLINE_EXCEEDED, as over gRPC.
	stop := context.AfterFunc(ctx, func() {
		if !hasDeadline || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	md := c.md
	if out, ok := metadata.FromOutgoingContext(ctx); ok {
		// A call's own credentials (the client's per-call token, which
		// the Bigtable gateway sends for its caller) replace the
		// connection's, so that the guard sees one identity: the call's.
		if len(out.Get("authorization")) > 0 {
			md = out
		} else {
			md = metadata.Join(out, c.md)
		}
	}
	sctx = metadata.NewIncomingContext(sctx, md)
	sctx = peer.NewContext(sctx, c.peer)
	ts.method = method
	sctx = grpc.NewContextWithServerTransportStream(sctx, ts)
	return sctx, func() {
		stop()
		cancelDeadline()
		cancel()
		c.s.local.end()
		<-c.slots
	}, nil
}

// Invoke runs a unary call.
func (c *localConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	m, ok := localMethods[method]
	if !ok {
		return status.Errorf(codes.Unimplemented, "unknown method %s for service %s", method, tabulapb.TabletServer_ServiceDesc.ServiceName)
	}
	req, out := args.(proto.Message), reply.(proto.Message)
	if n := proto.Size(req); n > maxMessageBytes {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, maxMessageBytes)
	}
	ts := &localTransport{}
	sctx, end, err := c.begin(ctx, method, ts)
	if err != nil {
		return err
	}
	defer end()
	dec := func(v any) error {
		copyInto(v.(proto.Message), req) // a deep copy: v is new
		return nil
	}
	resp, err := m.Handler(c.s, sctx, dec, c.s.unaryChain)
	ts.deliver(opts)
	if err != nil {
		if ctx.Err() != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		return wireStatus(err)
	}
	rm := resp.(proto.Message)
	if n := proto.Size(rm); n > maxMessageBytes {
		return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, maxMessageBytes)
	}
	copyInto(out, rm) // a deep copy: out is new
	return nil
}

// NewStream starts a streaming call: its handler runs on a goroutine of
// its own, as on a gRPC server, until it returns or the caller's context
// ends.
func (c *localConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	sd, ok := localStreams[method]
	if !ok {
		return nil, status.Errorf(codes.Unimplemented, "unknown method %s for service %s", method, tabulapb.TabletServer_ServiceDesc.ServiceName)
	}
	ts := &localTransport{headerSent: make(chan struct{})}
	sctx, end, err := c.begin(ctx, method, ts)
	if err != nil {
		return nil, err
	}
	st := &localStream{
		ctx: ctx, sctx: sctx, ts: ts,
		reqs: make(chan proto.Message, 1),
		out:  make(chan any, localStreamBuffer),
	}
	info := &grpc.StreamServerInfo{FullMethod: method, IsClientStream: sd.ClientStreams, IsServerStream: sd.ServerStreams}
	go func() {
		defer end()
		err := c.s.streamChain(c.s, (*localServerStream)(st), info, sd.Handler)
		if err != nil {
			st.final = wireStatus(err)
		}
		ts.sendHeader()
		close(st.out)
	}()
	return st, nil
}

// unaryChain runs the server's unary interceptors (s.unary, in order)
// around handler.
func (s *Server) unaryChain(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var next func(i int) grpc.UnaryHandler
	next = func(i int) grpc.UnaryHandler {
		if i == len(s.unary) {
			return handler
		}
		return func(ctx context.Context, req any) (any, error) { return s.unary[i](ctx, req, info, next(i+1)) }
	}
	return next(0)(ctx, req)
}

// streamChain runs the server's stream interceptors (s.stream, in order)
// around handler.
func (s *Server) streamChain(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	var next func(i int) grpc.StreamHandler
	next = func(i int) grpc.StreamHandler {
		if i == len(s.stream) {
			return handler
		}
		return func(srv any, ss grpc.ServerStream) error { return s.stream[i](srv, ss, info, next(i+1)) }
	}
	return next(0)(srv, ss)
}

// wireStatus is the error a gRPC client receives for a handler's err: its
// status (a context error's code for a context error, UNKNOWN for other
// errors), rebuilt from the status alone so that nothing else of the
// server's error reaches the client.
func wireStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	return status.ErrorProto(st.Proto())
}
