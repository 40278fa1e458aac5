package gateway

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
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
// caches see it (docs/OPERATIONS.md "Security").
//
// A caller may instead present a client certificate, when the gateway
// serves TLS (Options.TLS) and verifies it against the cluster's CA. The
// gateway cannot forward a certificate, so it asserts the certificate's
// common name to the cluster (client.WithActingFor: "tabula-acting-for"),
// which the servers accept only from the gateway identity's certificate
// (auth.GatewayName) that the gateway's own client must present: the
// call then runs with that principal's roles, as a native caller with the
// same certificate. A caller with both a token and a certificate is the
// token's principal, as on the native API, where the guard reads a token
// before a certificate. A call with neither is refused here with
// UNAUTHENTICATED, rather than sent with the gateway's own credentials:
// the gateway never lends its rights. A caller that sends
// "tabula-acting-for" itself is refused: that is the gateway's word to
// the cluster, never a Bigtable client's.

// callerExempt are the methods any caller may use without a token: the
// gRPC health service, which probes call without credentials and which
// reveals nothing (it answers from the gateway's own readiness).
var callerExempt = map[string]bool{
	"/grpc.health.v1.Health/Check": true,
	"/grpc.health.v1.Health/Watch": true,
	"/grpc.health.v1.Health/List":  true,
}

// errNoToken is the answer to a call without a token or certificate when
// CallerAuth is on.
var errNoToken = status.Error(codes.Unauthenticated,
	"gateway: this gateway runs every call as its caller: send a Tabula token as \"authorization: Bearer <token>\", or, over TLS, a client certificate signed by the cluster's CA (docs/GATEWAY.md \"Security\" shows how with each client); `tabula auth token create` makes a token")

// errCallerAsserts is the answer to a Bigtable call that carries the
// gateway's own assertion.
var errCallerAsserts = status.Error(codes.PermissionDenied,
	"gateway: a Bigtable caller cannot send tabula-acting-for: the gateway asserts who its caller is, from the caller's token or certificate")

// actingForKey is auth.ActingForKey (the gateway, a client of the
// cluster, does not import the server's packages).
const actingForKey = "tabula-acting-for"

// callerContext returns ctx carrying the caller's token or verified
// certificate's principal for the Tabula client, or UNAUTHENTICATED when
// the call has neither.
func callerContext(ctx context.Context, method string) (context.Context, error) {
	if callerExempt[method] {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(actingForKey)) > 0 {
		return ctx, errCallerAsserts
	}
	for _, v := range md.Get("authorization") {
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			if tok = strings.TrimSpace(tok); tok != "" {
				return client.WithToken(ctx, tok), nil
			}
		}
	}
	if name, ok := certName(ctx); ok {
		return client.WithActingFor(ctx, name), nil
	}
	return ctx, errNoToken
}

// certName returns the common name of the caller's client certificate,
// if the gateway's TLS verified it (Options.TLS); a certificate without
// one names no one.
func certName(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return "", false
	}
	cn := ti.State.VerifiedChains[0][0].Subject.CommonName
	return cn, cn != ""
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
