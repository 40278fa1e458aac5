package auth

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// ErrInvalid marks a request the caller must change (a bad principal,
// table or role); ErrNotFound one naming a token or grant that does not
// exist.
var (
	ErrInvalid  = errors.New("auth: invalid")
	ErrNotFound = errors.New("auth: not found")
)

// TokenInfo describes a token without its secret.
type TokenInfo struct {
	ID, Principal, Description string
	Created                    time.Time
}

// Grant gives Principal Role on Table (AllTables: every table and the
// cluster).
type Grant struct {
	Principal, Table string
	Role             Role
}

// CreateToken stores a new token for principal and returns it; the
// secret is not kept anywhere else, so it is shown once.
func CreateToken(ctx context.Context, kv meta.Store, l meta.Layout, principal, description string, now time.Time) (string, TokenInfo, error) {
	if err := checkGrantee(principal); err != nil {
		return "", TokenInfo{}, err
	}
	if len(description) > 1024 {
		return "", TokenInfo{}, fmt.Errorf("%w: the description has %d bytes; at most 1024", ErrInvalid, len(description))
	}
	token, id, hash, err := newToken()
	if err != nil {
		return "", TokenInfo{}, err
	}
	rec := meta.TokenRecord{Principal: principal, SHA256: hash, Description: description, Created: now.Unix()}
	// Create-only: two tokens never share an id, however unlikely.
	err = meta.CreateToken(ctx, kv, l, id, rec)
	if errors.Is(err, meta.ErrConflict) {
		return "", TokenInfo{}, fmt.Errorf("auth: token id %s already exists; try again", id)
	}
	if err != nil {
		return "", TokenInfo{}, err
	}
	return token, tokenInfo(id, rec), nil
}

func tokenInfo(id string, r meta.TokenRecord) TokenInfo {
	return TokenInfo{ID: id, Principal: r.Principal, Description: r.Description, Created: time.Unix(r.Created, 0)}
}

// RevokeToken deletes the token with this id.
func RevokeToken(ctx context.Context, kv meta.Store, l meta.Layout, id string) error {
	if len(id) != 16 || !isHex(id) {
		return fmt.Errorf("%w: token id %q is not 16 hex digits (see `tabula auth token list`)", ErrInvalid, id)
	}
	err := meta.DeleteToken(ctx, kv, l, id)
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("%w: no token with id %s", ErrNotFound, id)
	}
	return err
}

// ListTokens lists the tokens of principal (all if empty), oldest first.
func ListTokens(ctx context.Context, kv meta.Store, l meta.Layout, principal string) ([]TokenInfo, error) {
	tokens, err := meta.ListTokens(ctx, kv, l)
	if err != nil {
		return nil, err
	}
	var out []TokenInfo
	for _, e := range tokens {
		if principal == "" || e.Principal == principal {
			out = append(out, tokenInfo(e.ID, e.TokenRecord))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SetGrant gives principal role on table, replacing its earlier role
// there.
func SetGrant(ctx context.Context, kv meta.Store, l meta.Layout, g Grant) error {
	if err := checkGrantee(g.Principal); err != nil {
		return err
	}
	if err := checkTable(g.Table); err != nil {
		return err
	}
	if g.Role == None {
		return fmt.Errorf("%w: a grant needs a role (read, write or admin); to take one away use revoke", ErrInvalid)
	}
	return meta.PutGrant(ctx, kv, l, g.Principal, g.Table, meta.GrantRecord{Role: g.Role.String()})
}

// DeleteGrant removes principal's grant on table.
func DeleteGrant(ctx context.Context, kv meta.Store, l meta.Layout, principal, table string) error {
	if err := ValidatePrincipal(principal); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := checkTable(table); err != nil {
		return err
	}
	err := meta.DeleteGrant(ctx, kv, l, principal, table)
	if errors.Is(err, meta.ErrNotFound) {
		return fmt.Errorf("%w: %s has no grant on %s", ErrNotFound, principal, table)
	}
	return err
}

// ListGrants lists the grants, filtered by principal and table when they
// are not empty, sorted by principal then table.
func ListGrants(ctx context.Context, kv meta.Store, l meta.Layout, principal, table string) ([]Grant, error) {
	grants, err := meta.ListGrants(ctx, kv, l)
	if err != nil {
		return nil, err
	}
	var out []Grant
	for _, e := range grants {
		g, err := grantOf(e)
		if err != nil {
			return nil, err
		}
		if (principal == "" || g.Principal == principal) && (table == "" || g.Table == table) {
			out = append(out, g)
		}
	}
	sortGrants(out)
	return out, nil
}

func sortGrants(g []Grant) {
	sort.Slice(g, func(i, j int) bool {
		if g[i].Principal != g[j].Principal {
			return g[i].Principal < g[j].Principal
		}
		return g[i].Table < g[j].Table
	})
}

// grantOf reads the role of a stored grant.
func grantOf(e meta.GrantEntry) (Grant, error) {
	r, err := ParseRole(e.Role)
	if err != nil {
		return Grant{}, fmt.Errorf("auth: grant of %s on %s: %w", e.Principal, e.Table, err)
	}
	return Grant{Principal: e.Principal, Table: e.Table, Role: r}, nil
}

// checkGrantee refuses names that cannot hold tokens or grants: invalid
// ones and the cluster's own identities, which only certificates prove.
func checkGrantee(principal string) error {
	if err := ValidatePrincipal(principal); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if reserved(principal) {
		return fmt.Errorf("%w: %q is the identity of the cluster's own processes; it is proven by certificate only and takes no tokens or grants", ErrInvalid, principal)
	}
	return nil
}

func checkTable(table string) error {
	if table == AllTables {
		return nil
	}
	if ns, ok := strings.CutSuffix(table, ":*"); ok {
		if err := cell.ValidateNamespaceName(ns); err != nil {
			return fmt.Errorf("%w: grant on %q: %v", ErrInvalid, table, err)
		}
		return nil
	}
	if err := cell.ValidateTableName(table); err != nil {
		return fmt.Errorf("%w: %v (or \"NS:*\" for every table of namespace NS, or %q for every table)", ErrInvalid, err, AllTables)
	}
	return nil
}
