package client

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// checkSecurity refuses a token without TLS: gRPC would refuse every call
// with a less helpful error.
func (o Options) checkSecurity() error {
	if o.Token != "" && o.TLS == nil {
		return status.Error(codes.InvalidArgument, "client: a token needs TLS (Options.TLS, or --tls-ca on the command line): tokens are not sent in plaintext")
	}
	return nil
}

// securityDialOptions add TLS and the bearer token to the dial options;
// they come after the defaults, so TLS replaces plaintext. With TLS the
// credentials are installed even without Options.Token, so that a call
// made under WithToken carries its own caller's token.
func (o Options) securityDialOptions() []grpc.DialOption {
	// The assertion goes on every connection, plaintext too, so that a
	// client that cannot delegate (no TLS, no gateway certificate) is
	// refused by the servers rather than run as itself. Interceptors, not
	// per-call credentials: a call without an assertion costs a context
	// lookup, where credentials would make gRPC build each call's
	// audience string.
	d := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(withActingFor(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withActingFor(ctx), desc, cc, method, opts...)
		}),
	}
	if o.TLS != nil {
		d = append(d, grpc.WithTransportCredentials(credentials.NewTLS(o.TLS)),
			grpc.WithPerRPCCredentials(bearerToken(o.Token)))
	}
	return d
}

type callTokenKey struct{}

// WithToken returns a context whose calls authenticate with token instead
// of the client's own credentials (Options.Token, or the client
// certificate, which the servers' guard consults only when no token is
// sent): every call made with it, to masters and tablet servers, over
// gRPC or in process (Options.Local), runs with token's principal and its
// roles, as if that caller had its own client. The Bigtable gateway uses
// it to run each Bigtable call as its caller (docs/GATEWAY.md
// "Security"). A token needs TLS: on a plaintext client it is not sent,
// and the call goes without credentials.
func WithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callTokenKey{}, token)
}

// callToken returns the token WithToken put in ctx, if any.
func callToken(ctx context.Context) (string, bool) {
	tok, ok := ctx.Value(callTokenKey{}).(string)
	return tok, ok
}

type actingForKey struct{}

// WithActingFor returns a context whose calls run as principal instead of
// as this client: every call made with it, to masters and tablet servers,
// over gRPC or in process, carries "tabula-acting-for: <principal>"
// (auth.ActingForKey), and the servers' guards then check principal's
// roles, as for a native caller with principal's own certificate. The
// servers accept that only from a client whose TLS client certificate is
// the gateway identity (common name tabula-gateway) and which sends no
// token: from any other client every such call is refused with
// PERMISSION_DENIED, never run with the client's own rights. The Bigtable
// gateway uses it for a Bigtable client that authenticated to it with a
// certificate (docs/GATEWAY.md "Security").
func WithActingFor(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, actingForKey{}, principal)
}

// actingFor returns the principal WithActingFor put in ctx, if any.
func actingFor(ctx context.Context) (string, bool) {
	p, ok := ctx.Value(actingForKey{}).(string)
	return p, ok
}

// actingForMetadataKey is auth.ActingForKey: the client does not import
// the server packages.
const actingForMetadataKey = "tabula-acting-for"

// withActingFor adds the principal of WithActingFor, if any, to ctx's
// outgoing metadata.
func withActingFor(ctx context.Context) context.Context {
	if p, ok := actingFor(ctx); ok {
		return metadata.AppendToOutgoingContext(ctx, actingForMetadataKey, p)
	}
	return ctx
}

// bearerToken sends "authorization: Bearer <token>" with every call: the
// call's own token (WithToken) if it has one, else the client's (none if
// empty).
type bearerToken string

func (t bearerToken) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	tok, ok := callToken(ctx)
	if !ok {
		tok = string(t)
	}
	if tok == "" {
		return nil, nil
	}
	return map[string]string{"authorization": "Bearer " + tok}, nil
}

func (bearerToken) RequireTransportSecurity() bool { return true }

// callTokenConn is an in-process connection (Options.Local) that gives a
// call made under WithToken its caller's token as outgoing metadata, which
// the local connection presents instead of the client's own token, as the
// per-call credentials do over gRPC; and a call made under WithActingFor
// its assertion, beside the connection's own credentials.
type callTokenConn struct {
	grpc.ClientConnInterface
	tls bool // the client uses TLS: tokens are sent only then
}

func (c callTokenConn) withToken(ctx context.Context) context.Context {
	ctx = withActingFor(ctx)
	if tok, ok := callToken(ctx); ok && c.tls && tok != "" {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	return ctx
}

func (c callTokenConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.ClientConnInterface.Invoke(c.withToken(ctx), method, args, reply, opts...)
}

func (c callTokenConn) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.ClientConnInterface.NewStream(c.withToken(ctx), desc, method, opts...)
}
