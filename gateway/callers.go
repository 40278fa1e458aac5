package gateway

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
)

// With Options.CallerAuth every Bigtable call runs as its own caller: the
// caller's "authorization: Bearer <Tabula token>" header is handed to the
// Tabula client (client.WithToken), which presents it instead of the
// gateway's own credentials on every call the request turns into, to the
// master and to the tablet servers, over gRPC or in process. Those servers'
// guards then authenticate the token and check its roles, with the same
// rules and the same credentials cache as for a native client: the gateway
// decides nothing itself, so there is one source of truth, and a token
// revoked in etcd stops working through the gateway when the servers'
// caches see it (docs/OPERATIONS.md "Security"). A call without a token is
// refused here with UNAUTHENTICATED, rather than sent with the gateway's
// own credentials: the gateway never lends its rights.

// callerExempt are the methods any caller may use without a token: the
// gRPC health service, which probes call without credentials and which
// reveals nothing (it answers from the gateway's own readiness).
var callerExempt = map[string]bool{
	"/grpc.health.v1.Health/Check": true,
	"/grpc.health.v1.Health/Watch": true,
	"/grpc.health.v1.Health/List":  true,
}

// errNoToken is the answer to a call without a token when CallerAuth is
// on.
var errNoToken = status.Error(codes.Unauthenticated,
	"gateway: this gateway runs every call as its caller: send a Tabula token as \"authorization: Bearer <token>\" (docs/GATEWAY.md \"Security\" shows how with each client); `tabula auth token create` makes one")

// callerContext returns ctx carrying the caller's token for the Tabula
// client, or UNAUTHENTICATED when the call has none.
func callerContext(ctx context.Context, method string) (context.Context, error) {
	if callerExempt[method] {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if tok = strings.TrimSpace(tok); tok != "" {
				return client.WithToken(ctx, tok), nil
			}
		}
	}
	return ctx, errNoToken
}

// callerInterceptors are the server options that run each call as its
// caller (Options.CallerAuth); none without it.
func (o Options) callerInterceptors() []grpc.ServerOption {
	if !o.CallerAuth {
		return nil
	}
	unary := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := callerContext(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
	stream := func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := callerContext(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, callerStream{ServerStream: ss, ctx: ctx})
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary), grpc.ChainStreamInterceptor(stream)}
}

// callerStream is a server stream whose context carries its caller's
// token.
type callerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s callerStream) Context() context.Context { return s.ctx }
