package master

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/meta"
)

// The security calls: tokens and grants live in etcd (auth package), so
// any master, leader or standby, can manage them. The guard has already
// checked that the caller is a cluster admin (auth.MasterRules).

// CreateToken issues a token for a principal; its secret is in the answer
// only.
func (m *Master) CreateToken(ctx context.Context, req *tabulapb.CreateTokenRequest) (*tabulapb.CreateTokenResponse, error) {
	tok, info, err := auth.CreateToken(ctx, m.cli, m.layout, req.GetPrincipal(), req.GetDescription(), time.Now())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.CreateTokenResponse{Token: tok, Info: tokenInfoPB(info)}, nil
}

// ListTokens lists tokens without their secrets.
func (m *Master) ListTokens(ctx context.Context, req *tabulapb.ListTokensRequest) (*tabulapb.ListTokensResponse, error) {
	infos, err := auth.ListTokens(ctx, m.cli, m.layout, req.GetPrincipal())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	out := &tabulapb.ListTokensResponse{}
	for _, in := range infos {
		out.Tokens = append(out.Tokens, tokenInfoPB(in))
	}
	return out, nil
}

// RevokeToken deletes a token; every server refuses it once its watch
// has seen the deletion.
func (m *Master) RevokeToken(ctx context.Context, req *tabulapb.RevokeTokenRequest) (*tabulapb.RevokeTokenResponse, error) {
	if err := auth.RevokeToken(ctx, m.cli, m.layout, req.GetId()); err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.RevokeTokenResponse{}, nil
}

// Grant gives a principal a role on a table or on "*".
func (m *Master) Grant(ctx context.Context, req *tabulapb.GrantRequest) (*tabulapb.GrantResponse, error) {
	g := req.GetGrant()
	role, err := auth.ParseRole(g.GetRole())
	if err != nil {
		return nil, toStatus(ctx, fmt.Errorf("%w: %v", auth.ErrInvalid, err))
	}
	if err := auth.SetGrant(ctx, m.cli, m.layout, auth.Grant{Principal: g.GetPrincipal(), Table: g.GetTable(), Role: role}); err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.GrantResponse{}, nil
}

// Revoke removes a principal's grant on a table or on "*".
func (m *Master) Revoke(ctx context.Context, req *tabulapb.RevokeRequest) (*tabulapb.RevokeResponse, error) {
	if err := auth.DeleteGrant(ctx, m.cli, m.layout, req.GetPrincipal(), req.GetTable()); err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.RevokeResponse{}, nil
}

// ListGrants lists grants, filtered by principal and table.
func (m *Master) ListGrants(ctx context.Context, req *tabulapb.ListGrantsRequest) (*tabulapb.ListGrantsResponse, error) {
	gs, err := auth.ListGrants(ctx, m.cli, m.layout, req.GetPrincipal(), req.GetTable())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.ListGrantsResponse{Grants: grantsPB(gs)}, nil
}

// WhoAmI tells the caller who the cluster takes it for.
func (m *Master) WhoAmI(ctx context.Context, _ *tabulapb.WhoAmIRequest) (*tabulapb.WhoAmIResponse, error) {
	id := auth.IdentityFrom(ctx)
	out := &tabulapb.WhoAmIResponse{Principal: id.Name, Method: id.Method, AuthEnabled: m.guard.AuthEnabled()}
	if c := m.guard.Cache(); c != nil && id.Name != "" {
		out.Grants = grantsPB(c.Grants(id.Name))
	}
	return out, nil
}

func tokenInfoPB(in auth.TokenInfo) *tabulapb.TokenInfo {
	return &tabulapb.TokenInfo{Id: in.ID, Principal: in.Principal, Description: in.Description, CreatedUnix: in.Created.Unix()}
}

func grantsPB(gs []auth.Grant) []*tabulapb.GrantInfo {
	out := make([]*tabulapb.GrantInfo, 0, len(gs))
	for _, g := range gs {
		out = append(out, &tabulapb.GrantInfo{Principal: g.Principal, Table: g.Table, Role: g.Role.String()})
	}
	return out
}

// newGuard builds the guard of the master's gRPC port: roles checked
// against the tokens and grants in etcd when opts.Auth is on, by the
// cache it returns too (nil when auth is off), which the caller runs.
func newGuard(opts Options, cli meta.Store, l meta.Layout, log *slog.Logger) (*auth.Guard, *auth.Cache) {
	var cache *auth.Cache
	if opts.Auth {
		cache = auth.NewCache(cli, l, log)
	}
	return auth.NewGuard(auth.GuardConfig{Rules: auth.MasterRules(), Cache: cache, MutualTLS: opts.ServerTLS != nil, Log: log}), cache
}

// serverOptions are the gRPC server's: TLS when configured, the guard
// before every handler, then the index sync after writes.
func (m *Master) serverOptions() []grpc.ServerOption {
	o := []grpc.ServerOption{
		grpc.WaitForHandlers(true),
		grpc.ChainUnaryInterceptor(m.guard.Unary(), m.syncAfterWrite),
		grpc.ChainStreamInterceptor(m.guard.Stream()),
	}
	if m.opts.ServerTLS != nil {
		o = append(o, grpc.Creds(credentials.NewTLS(m.opts.ServerTLS)))
	}
	return o
}
