package tabletserver

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tabuladb/tabula/auth"
)

// serverOptions are grpcServerOptions plus security: TLS when configured,
// and the guard (auth package) before every handler. The guard's rules
// let only the master's certificate make the master-only calls once the
// port verifies certificates, and check roles when Options.Auth is on;
// its credentials cache follows etcd in the work group. The interceptors
// are kept in s.unary and s.stream too, for in-process calls
// (inprocess.go), which go through the same ones in the same order.
func (s *Server) serverOptions(ctx context.Context) []grpc.ServerOption {
	var cache *auth.Cache
	if s.opts.Auth {
		cache = auth.NewCache(s.etcd, s.opts.layout(), s.logger)
		s.work.run(cache.Run)
	}
	g := auth.NewGuard(auth.GuardConfig{
		Rules:     auth.TabletServerRules(),
		Cache:     cache,
		MutualTLS: s.opts.ServerTLS != nil,
		Log:       s.logger,
	})
	// Metrics first, so that calls the guard refuses are counted too.
	s.unary, s.stream = nil, nil
	if s.metrics != nil {
		u, st := s.metrics.grpc.Interceptors()
		s.unary, s.stream = append(s.unary, u), append(s.stream, st)
	}
	s.unary, s.stream = append(s.unary, g.Unary()), append(s.stream, g.Stream())
	// Quotas after the guard, so that the caller is known (quota.go).
	qu, qs := s.startQuotas()
	s.unary, s.stream = append(s.unary, qu), append(s.stream, qs)
	o := append(grpcServerOptions(), grpc.ChainUnaryInterceptor(s.unary...), grpc.ChainStreamInterceptor(s.stream...))
	if s.opts.ServerTLS != nil {
		o = append(o, grpc.Creds(credentials.NewTLS(s.opts.ServerTLS)))
	}
	return o
}
