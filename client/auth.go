package client

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TokenInfo describes a bearer token (never its secret).
type TokenInfo struct {
	ID, Principal, Description string
	Created                    time.Time
}

// Grant gives Principal Role ("read", "write" or "admin") on Table ("*":
// every table and the cluster).
type Grant struct {
	Principal, Table, Role string
}

// Identity is who the cluster takes the caller for.
type Identity struct {
	// Principal is empty when the call carried no credentials.
	Principal string
	// Method is "token", "certificate" or "none".
	Method string
	// AuthEnabled says whether the cluster requires authentication.
	AuthEnabled bool
	Grants      []Grant
}

// CreateToken issues a token for principal and returns it with its
// description. The token's secret is shown only here: store it. A retry
// after an UNAVAILABLE answer may leave an unused token behind (listed,
// revocable).
func (a *AdminClient) CreateToken(ctx context.Context, principal, description string) (string, TokenInfo, error) {
	var resp *tabulapb.CreateTokenResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.CreateToken(ctx, &tabulapb.CreateTokenRequest{Principal: principal, Description: description})
		return err
	})
	if err != nil {
		return "", TokenInfo{}, err
	}
	return resp.GetToken(), tokenInfo(resp.GetInfo()), nil
}

// ListTokens lists the tokens of principal (every token if empty).
func (a *AdminClient) ListTokens(ctx context.Context, principal string) ([]TokenInfo, error) {
	var resp *tabulapb.ListTokensResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListTokens(ctx, &tabulapb.ListTokensRequest{Principal: principal})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, 0, len(resp.GetTokens()))
	for _, t := range resp.GetTokens() {
		out = append(out, tokenInfo(t))
	}
	return out, nil
}

// RevokeToken deletes the token with this id (from ListTokens).
func (a *AdminClient) RevokeToken(ctx context.Context, id string) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.RevokeToken(ctx, &tabulapb.RevokeTokenRequest{Id: id})
		return err
	})
}

// Grant gives g.Principal g.Role on g.Table, replacing its role there.
func (a *AdminClient) Grant(ctx context.Context, g Grant) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.Grant(ctx, &tabulapb.GrantRequest{Grant: &tabulapb.GrantInfo{Principal: g.Principal, Table: g.Table, Role: g.Role}})
		return err
	})
}

// Revoke removes principal's grant on table.
func (a *AdminClient) Revoke(ctx context.Context, principal, table string) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.Revoke(ctx, &tabulapb.RevokeRequest{Principal: principal, Table: table})
		return err
	})
}

// ListGrants lists grants, filtered by principal and table when set.
func (a *AdminClient) ListGrants(ctx context.Context, principal, table string) ([]Grant, error) {
	var resp *tabulapb.ListGrantsResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListGrants(ctx, &tabulapb.ListGrantsRequest{Principal: principal, Table: table})
		return err
	})
	if err != nil {
		return nil, err
	}
	return grants(resp.GetGrants()), nil
}

// WhoAmI asks the cluster who it takes the caller for.
func (a *AdminClient) WhoAmI(ctx context.Context) (Identity, error) {
	var resp *tabulapb.WhoAmIResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.WhoAmI(ctx, &tabulapb.WhoAmIRequest{})
		return err
	})
	if err != nil {
		return Identity{}, err
	}
	return Identity{Principal: resp.GetPrincipal(), Method: resp.GetMethod(), AuthEnabled: resp.GetAuthEnabled(), Grants: grants(resp.GetGrants())}, nil
}

func tokenInfo(t *tabulapb.TokenInfo) TokenInfo {
	return TokenInfo{ID: t.GetId(), Principal: t.GetPrincipal(), Description: t.GetDescription(), Created: time.Unix(t.GetCreatedUnix(), 0)}
}

func grants(gs []*tabulapb.GrantInfo) []Grant {
	out := make([]Grant, 0, len(gs))
	for _, g := range gs {
		out = append(out, Grant{Principal: g.GetPrincipal(), Table: g.GetTable(), Role: g.GetRole()})
	}
	return out
}
