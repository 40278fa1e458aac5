package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// ErrInvalid marks a request the caller must change (a bad principal,
// table or role); ErrNotFound one naming a token or grant that does not
// exist.
var (
	ErrInvalid  = errors.New("invalid")
	ErrNotFound = errors.New("not found")
)

// tokenRecord is the etcd value of one token.
type tokenRecord struct {
	Principal   string `json:"principal"`
	SHA256      string `json:"sha256"`
	Description string `json:"description,omitempty"`
	Created     int64  `json:"created"` // unix seconds
}

// grantRecord is the etcd value of one grant.
type grantRecord struct {
	Role string `json:"role"`
}

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
func CreateToken(ctx context.Context, kv clientv3.KV, l meta.Layout, principal, description string, now time.Time) (string, TokenInfo, error) {
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
	rec := tokenRecord{Principal: principal, SHA256: hash, Description: description, Created: now.Unix()}
	b, err := json.Marshal(rec)
	if err != nil {
		return "", TokenInfo{}, err
	}
	key := l.AuthTokenKey(id)
	// Create-only: two tokens never share an id, however unlikely.
	resp, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, string(b))).Commit()
	if err != nil {
		return "", TokenInfo{}, err
	}
	if !resp.Succeeded {
		return "", TokenInfo{}, fmt.Errorf("token id %s already exists; try again", id)
	}
	return token, rec.info(id), nil
}

func (r tokenRecord) info(id string) TokenInfo {
	return TokenInfo{ID: id, Principal: r.Principal, Description: r.Description, Created: time.Unix(r.Created, 0)}
}

// RevokeToken deletes the token with this id.
func RevokeToken(ctx context.Context, kv clientv3.KV, l meta.Layout, id string) error {
	if len(id) != 16 || !isHex(id) {
		return fmt.Errorf("%w: token id %q is not 16 hex digits (see `tabula auth token list`)", ErrInvalid, id)
	}
	resp, err := kv.Delete(ctx, l.AuthTokenKey(id))
	if err != nil {
		return err
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%w: no token with id %s", ErrNotFound, id)
	}
	return nil
}

// ListTokens lists the tokens of principal (all if empty), oldest first.
func ListTokens(ctx context.Context, kv clientv3.KV, l meta.Layout, principal string) ([]TokenInfo, error) {
	resp, err := kv.Get(ctx, l.AuthTokensPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []TokenInfo
	for _, e := range resp.Kvs {
		id := strings.TrimPrefix(string(e.Key), l.AuthTokensPrefix())
		var rec tokenRecord
		if err := json.Unmarshal(e.Value, &rec); err != nil {
			return nil, fmt.Errorf("token record %s: %w", e.Key, err)
		}
		if principal == "" || rec.Principal == principal {
			out = append(out, rec.info(id))
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
func SetGrant(ctx context.Context, kv clientv3.KV, l meta.Layout, g Grant) error {
	if err := checkGrantee(g.Principal); err != nil {
		return err
	}
	if err := checkTable(g.Table); err != nil {
		return err
	}
	if g.Role == None {
		return fmt.Errorf("%w: a grant needs a role (read, write or admin); to take one away use revoke", ErrInvalid)
	}
	b, err := json.Marshal(grantRecord{Role: g.Role.String()})
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, l.AuthGrantKey(g.Principal, g.Table), string(b))
	return err
}

// DeleteGrant removes principal's grant on table.
func DeleteGrant(ctx context.Context, kv clientv3.KV, l meta.Layout, principal, table string) error {
	if err := ValidatePrincipal(principal); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := checkTable(table); err != nil {
		return err
	}
	resp, err := kv.Delete(ctx, l.AuthGrantKey(principal, table))
	if err != nil {
		return err
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%w: %s has no grant on %s", ErrNotFound, principal, table)
	}
	return nil
}

// ListGrants lists the grants, filtered by principal and table when they
// are not empty, sorted by principal then table.
func ListGrants(ctx context.Context, kv clientv3.KV, l meta.Layout, principal, table string) ([]Grant, error) {
	resp, err := kv.Get(ctx, l.AuthGrantsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []Grant
	for _, e := range resp.Kvs {
		g, err := decodeGrant(l, e.Key, e.Value)
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

func decodeGrant(l meta.Layout, key, value []byte) (Grant, error) {
	p, t, ok := strings.Cut(strings.TrimPrefix(string(key), l.AuthGrantsPrefix()), "/")
	if !ok {
		return Grant{}, fmt.Errorf("grant key %q has no table", key)
	}
	var rec grantRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return Grant{}, fmt.Errorf("grant record %s: %w", key, err)
	}
	r, err := ParseRole(rec.Role)
	if err != nil {
		return Grant{}, fmt.Errorf("grant record %s: %w", key, err)
	}
	return Grant{Principal: p, Table: t, Role: r}, nil
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
	if err := cell.ValidateTableName(table); err != nil {
		return fmt.Errorf("%w: %v (or %q for every table)", ErrInvalid, err, AllTables)
	}
	return nil
}
