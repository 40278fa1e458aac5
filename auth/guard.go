package auth

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// How a caller proved who it is.
const (
	ByToken       = "token"
	ByCertificate = "certificate"
	// ByGateway is a principal the gateway identity acts for
	// (ActingForKey): the gateway verified the principal's certificate.
	ByGateway = "gateway"
	ByNothing = "none"
)

// ActingForKey is the gRPC metadata key of a delegated call: a caller
// whose verified certificate names GatewayName sends
// "tabula-acting-for: <principal>" to run the call as that principal,
// whose roles alone then apply, exactly as for a native caller (the
// Bigtable gateway does, for a Bigtable client that authenticated to it
// with a certificate, as HBase's gateways do with proxy users). From any
// other caller (another certificate, a token, a caller with both, a
// plaintext port) the call is refused, never run as the caller itself.
const ActingForKey = "tabula-acting-for"

// Identity is who a call comes from. Name is empty for a caller that gave
// no credentials.
type Identity struct {
	Name   string
	Method string
	// Via is the identity that acts for Name (GatewayName), when Method is
	// ByGateway; empty otherwise.
	Via string
}

// GuardConfig configures a Guard.
type GuardConfig struct {
	// Rules map full method names to what they need. A method without a
	// rule is refused.
	Rules map[string]Rule
	// Cache, when set, turns authentication and role checks on.
	Cache *Cache
	// MutualTLS says the port verifies client certificates: master-only
	// calls then need the master's certificate. Without it (a plaintext
	// dev cluster) they are open to anyone who can reach the port.
	MutualTLS bool
	// Log receives audit lines (info) and refusals (warn).
	Log *slog.Logger
}

// Guard checks every call of a gRPC server against its rules.
type Guard struct {
	cfg GuardConfig
	now func() time.Time // the refusal log's clock

	mu         sync.Mutex // guards the refusal log's rate limit
	logSecond  int64
	logged     int
	suppressed int
}

// NewGuard returns a guard; install its interceptors on the server.
func NewGuard(cfg GuardConfig) *Guard {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Guard{cfg: cfg, now: time.Now}
}

// AuthEnabled reports whether calls must authenticate.
func (g *Guard) AuthEnabled() bool { return g.cfg.Cache != nil }

// Cache returns the credentials cache (nil without auth).
func (g *Guard) Cache() *Cache { return g.cfg.Cache }

type identityKey struct{}

// IdentityFrom returns the caller identity the guard found for this call.
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	if id.Method == "" {
		id.Method = ByNothing
	}
	return id
}

// Unary is the interceptor for unary calls.
func (g *Guard) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, rule, err := g.check(ctx, info.FullMethod, req)
		if err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		if rule.Audit {
			g.audit(ctx, info.FullMethod, req, rule, err)
		}
		return resp, err
	}
}

// Stream is the interceptor for streaming calls: the check runs when the
// handler receives the request, since that is when the tables are known.
func (g *Guard) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &guardedStream{ServerStream: ss, g: g, method: info.FullMethod})
	}
}

type guardedStream struct {
	grpc.ServerStream
	g       *Guard
	method  string
	ctx     context.Context // set after the first message passed the check
	checked bool
}

func (s *guardedStream) Context() context.Context {
	if s.ctx != nil {
		return s.ctx
	}
	return s.ServerStream.Context()
}

func (s *guardedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if s.checked {
		return nil
	}
	ctx, _, err := s.g.check(s.ServerStream.Context(), s.method, m)
	if err != nil {
		return err
	}
	s.ctx, s.checked = ctx, true
	return nil
}

// check authenticates the caller and applies the method's rule. It
// returns the context carrying the caller's identity.
func (g *Guard) check(ctx context.Context, method string, req any) (context.Context, Rule, error) {
	rule, ok := g.cfg.Rules[method]
	if !ok {
		return ctx, rule, g.refuse(ctx, method, Identity{}, codes.PermissionDenied, "%s has no access rule; it is refused", method)
	}
	id, err := g.identify(ctx)
	if err != nil {
		return ctx, rule, g.refuse(ctx, method, id, status.Code(err), "%s", status.Convert(err).Message())
	}
	ctx = context.WithValue(ctx, identityKey{}, id)
	switch {
	case rule.Open:
		return ctx, rule, nil
	case rule.MasterOnly:
		if !g.cfg.MutualTLS || (id.Method == ByCertificate && id.Name == MasterName) {
			return ctx, rule, nil
		}
		code := codes.PermissionDenied
		if id.Name == "" {
			code = codes.Unauthenticated
		}
		return ctx, rule, g.refuse(ctx, method, id, code,
			"%s is called by the master only: the caller must present the master's certificate (common name %s)", shortMethod(method), MasterName)
	case g.cfg.Cache == nil:
		return ctx, rule, nil
	case id.Name == "":
		return ctx, rule, g.refuse(ctx, method, id, codes.Unauthenticated,
			"this cluster requires authentication: pass a token (--token or TABULA_TOKEN; client.Options.Token) or a client certificate signed by the cluster's CA")
	case rule.Role == None && !rule.Cluster:
		return ctx, rule, nil
	}
	tables := []string{AllTables}
	if !rule.Cluster && rule.Tables != nil {
		tables = rule.Tables(req)
	}
	for _, t := range tables {
		if g.cfg.Cache.RoleOn(id.Name, t) >= rule.Role {
			continue
		}
		// A grant made just now may not have reached the watch yet.
		if g.cfg.Cache.Sync(ctx) == nil && g.cfg.Cache.RoleOn(id.Name, t) >= rule.Role {
			continue
		}
		what := "table " + t
		if t == AllTables {
			what = "the cluster"
		}
		return ctx, rule, g.refuse(ctx, method, id, codes.PermissionDenied,
			"%s may not call %s on %s: it needs the %s role there; an admin grants it with `tabula auth grant %s %s %s`",
			id.Name, shortMethod(method), what, rule.Role, id.Name, t, rule.Role)
	}
	return ctx, rule, nil
}

// identify finds the caller: the principal a trusted gateway acts for
// when the call says so (delegated), else a bearer token when the call
// carries one (when auth is on), else the verified client certificate's
// common name.
func (g *Guard) identify(ctx context.Context) (Identity, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if asserted := md.Get(ActingForKey); len(asserted) > 0 {
		return g.delegated(ctx, md, asserted)
	}
	if g.cfg.Cache != nil {
		if tok, ok := bearer(ctx); ok {
			name, err := g.cfg.Cache.Authenticate(tok)
			if err == errUnknownToken && g.cfg.Cache.Sync(ctx) == nil {
				// A token made just now may not have reached the watch.
				name, err = g.cfg.Cache.Authenticate(tok)
			}
			if err == errNotLoaded {
				return Identity{}, status.Error(codes.Unavailable, err.Error())
			}
			if err != nil {
				return Identity{Method: ByToken}, status.Error(codes.Unauthenticated, err.Error())
			}
			return Identity{Name: name, Method: ByToken}, nil
		}
	}
	if name, ok := certName(ctx); ok {
		return Identity{Name: name, Method: ByCertificate}, nil
	}
	return Identity{Method: ByNothing}, nil
}

// certName returns the common name of the caller's verified client
// certificate.
func certName(ctx context.Context) (string, bool) {
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			if chains := ti.State.VerifiedChains; len(chains) > 0 && len(chains[0]) > 0 {
				return chains[0][0].Subject.CommonName, true
			}
		}
	}
	return "", false
}

// delegated checks a call that asserts the principal it acts for
// (ActingForKey): only the gateway identity may, proven by its verified
// certificate on a port that verifies certificates, with no token (a
// token is someone else's credential: the two together are refused, not
// resolved), and only for one valid principal that is not one of the
// cluster's own identities (so that no assertion reaches the master-only
// calls or another gateway's rights). Everything else is refused with
// PERMISSION_DENIED: an assertion is never ignored, so a caller can
// never take a refusal of it for its own identity's answer.
func (g *Guard) delegated(ctx context.Context, md metadata.MD, asserted []string) (Identity, error) {
	cn, hasCert := certName(ctx)
	caller := Identity{Method: ByNothing}
	if hasCert {
		caller = Identity{Name: cn, Method: ByCertificate}
	}
	deny := func(why string) (Identity, error) {
		return caller, status.Error(codes.PermissionDenied, "auth: "+ActingForKey+" refused: "+why)
	}
	switch {
	case len(md.Get("authorization")) > 0:
		return deny("a call that carries a token cannot act for another principal")
	case !g.cfg.MutualTLS || !hasCert:
		return deny("only the gateway identity (a verified client certificate with common name " + GatewayName + ", over TLS) may act for another principal")
	case cn != GatewayName:
		return deny(cn + " may not act for another principal: only the gateway identity (" + GatewayName + ") may")
	case len(asserted) != 1:
		return deny("a call acts for one principal")
	}
	name := asserted[0]
	if err := ValidatePrincipal(name); err != nil {
		return deny(err.Error())
	}
	if reserved(name) {
		return deny(name + " is one of the cluster's own identities; no one acts for it")
	}
	return Identity{Name: name, Method: ByGateway, Via: cn}, nil
}

// bearer returns the token of an "authorization: Bearer <token>" header.
func bearer(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(tok), true
		}
	}
	return "", false
}

// refuse logs a refusal (at most 20 lines a second, so a flood of bad
// calls cannot flood the log) and returns its status.
func (g *Guard) refuse(ctx context.Context, method string, id Identity, code codes.Code, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	now := g.now().Unix()
	g.mu.Lock()
	if now != g.logSecond {
		if g.suppressed > 0 {
			g.cfg.Log.Warn("auth: refusals not logged", "count", g.suppressed)
		}
		g.logSecond, g.logged, g.suppressed = now, 0, 0
	}
	logIt := g.logged < 20
	if logIt {
		g.logged++
	} else {
		g.suppressed++
	}
	g.mu.Unlock()
	if logIt {
		g.cfg.Log.Warn("auth: refused", append(who(id), "call", method, "code", code.String(), "peer", peerAddr(ctx), "why", msg)...)
	}
	return status.Error(code, msg)
}

// audit writes the audit line of an administrative call: who, what, on
// which table, from where, and how it ended; the log line's time is when.
func (g *Guard) audit(ctx context.Context, method string, req any, rule Rule, err error) {
	id := IdentityFrom(ctx)
	target := AllTables
	if !rule.Cluster && rule.Tables != nil {
		target = strings.Join(rule.Tables(req), ",")
	}
	g.cfg.Log.Info("audit", append(who(id), "call", shortMethod(method), "table", target,
		"code", status.Code(err).String(), "peer", peerAddr(ctx))...)
}

// who are the log attributes naming a caller: principal and method, and
// the identity it came through for a delegated call.
func who(id Identity) []any {
	if id.Via != "" {
		return []any{"principal", id.Name, "by", id.Method, "via", id.Via}
	}
	return []any{"principal", id.Name, "by", id.Method}
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return ""
}

func shortMethod(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}
