package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Tokens and grants of the auth package (docs/OPERATIONS.md "Security"),
// under the cluster's prefix:
//
//	auth/tokens/<id>                 TokenRecord: {"principal":..,"sha256":..,"description":..,"created":..}
//	auth/grants/<principal>/<table>  GrantRecord: {"role":"read"|"write"|"admin"}; table "*" is every table, "ns:*" every table of namespace ns
//
// meta stores and reads them; what they mean (hashing secrets, ordering
// roles, checking calls) is auth's. Their JSON is frozen
// (testdata/v1/auth-*.json): running clusters hold it.

// TokenRecord is the value of auth/tokens/<id>.
type TokenRecord struct {
	Principal string `json:"principal"`
	// SHA256 is the hex SHA-256 of the token's secret (never the secret).
	SHA256      string `json:"sha256"`
	Description string `json:"description,omitempty"`
	Created     int64  `json:"created"` // unix seconds
}

// GrantRecord is the value of auth/grants/<principal>/<table>.
type GrantRecord struct {
	Role string `json:"role"`
}

// TokenEntry is a token record with the id its key names.
type TokenEntry struct {
	ID string
	TokenRecord
}

// GrantEntry is a grant record with the principal and table its key names.
type GrantEntry struct {
	Principal, Table string
	GrantRecord
}

// EncodeToken returns the JSON stored under AuthTokenKey.
func EncodeToken(r TokenRecord) string { return mustJSON(r) }

// DecodeToken parses a value stored under AuthTokenKey.
func DecodeToken(b []byte) (TokenRecord, error) {
	var r TokenRecord
	err := json.Unmarshal(b, &r)
	return r, err
}

// EncodeGrant returns the JSON stored under AuthGrantKey.
func EncodeGrant(r GrantRecord) string { return mustJSON(r) }

// DecodeGrant parses a grant's key and value. The key is read as the
// auth package always read it: the part after auth/grants/, split at its
// first '/'.
func DecodeGrant(l Layout, key, value []byte) (GrantEntry, error) {
	p, t, ok := strings.Cut(strings.TrimPrefix(string(key), l.AuthGrantsPrefix()), "/")
	if !ok {
		return GrantEntry{}, fmt.Errorf("meta: grant key %q has no table", key)
	}
	var r GrantRecord
	if err := json.Unmarshal(value, &r); err != nil {
		return GrantEntry{}, fmt.Errorf("meta: grant record %s: %w", key, err)
	}
	return GrantEntry{Principal: p, Table: t, GrantRecord: r}, nil
}

// CreateToken stores token id, create-only (ErrConflict if the id is
// taken).
func CreateToken(ctx context.Context, kv clientv3.KV, l Layout, id string, r TokenRecord) error {
	key := l.AuthTokenKey(id)
	resp, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, EncodeToken(r))).Commit()
	if err != nil {
		return fmt.Errorf("meta: creating token %s: %w", id, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: token id %s exists", ErrConflict, id)
	}
	return nil
}

// DeleteToken deletes token id; ErrNotFound if there is none.
func DeleteToken(ctx context.Context, kv clientv3.KV, l Layout, id string) error {
	resp, err := kv.Delete(ctx, l.AuthTokenKey(id))
	if err != nil {
		return fmt.Errorf("meta: deleting token %s: %w", id, err)
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%w: token %s", ErrNotFound, id)
	}
	return nil
}

// ListTokens reads every token, in key order; a record that does not
// decode fails the read.
func ListTokens(ctx context.Context, kv clientv3.KV, l Layout) ([]TokenEntry, error) {
	resp, err := kv.Get(ctx, l.AuthTokensPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("meta: reading tokens: %w", err)
	}
	var out []TokenEntry
	for _, e := range resp.Kvs {
		r, err := DecodeToken(e.Value)
		if err != nil {
			return nil, fmt.Errorf("meta: token record %s: %w", e.Key, err)
		}
		out = append(out, TokenEntry{ID: strings.TrimPrefix(string(e.Key), l.AuthTokensPrefix()), TokenRecord: r})
	}
	return out, nil
}

// PutGrant writes principal's grant on table, replacing the one there.
func PutGrant(ctx context.Context, kv clientv3.KV, l Layout, principal, table string, r GrantRecord) error {
	if _, err := kv.Put(ctx, l.AuthGrantKey(principal, table), EncodeGrant(r)); err != nil {
		return fmt.Errorf("meta: writing the grant of %s on %s: %w", principal, table, err)
	}
	return nil
}

// DeleteGrant deletes principal's grant on table; ErrNotFound if there is
// none.
func DeleteGrant(ctx context.Context, kv clientv3.KV, l Layout, principal, table string) error {
	resp, err := kv.Delete(ctx, l.AuthGrantKey(principal, table))
	if err != nil {
		return fmt.Errorf("meta: deleting the grant of %s on %s: %w", principal, table, err)
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("%w: grant of %s on %s", ErrNotFound, principal, table)
	}
	return nil
}

// ListGrants reads every grant, in key order; a record that does not
// decode fails the read.
func ListGrants(ctx context.Context, kv clientv3.KV, l Layout) ([]GrantEntry, error) {
	resp, err := kv.Get(ctx, l.AuthGrantsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("meta: reading grants: %w", err)
	}
	var out []GrantEntry
	for _, e := range resp.Kvs {
		g, err := DecodeGrant(l, e.Key, e.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// AuthEntry is one key under auth/, read or changed, decoded: a token
// (IsToken, with ID) or else a grant (every other key under auth/ is read
// as one, as the auth package always did; a deleted key outside tokens/
// and grants/ is neither).
type AuthEntry struct {
	Key     string
	IsToken bool
	ID      string // the token's id
	Grant   GrantEntry
	Token   TokenRecord
	// Deleted is set for a watch's delete; a deleted grant has Principal
	// and Table set (IsGrant), nothing else.
	Deleted bool
	IsGrant bool
	// Err is set when a put's key or value does not decode.
	Err error
	// Rev is the etcd revision of a watch's change (the put's or the
	// delete's); 0 for a read.
	Rev int64
}

func authEntry(l Layout, key, value []byte, deleted bool) AuthEntry {
	e := AuthEntry{Key: string(key), Deleted: deleted}
	if id, ok := strings.CutPrefix(e.Key, l.AuthTokensPrefix()); ok {
		e.IsToken, e.ID = true, id
		if !deleted {
			e.Token, e.Err = DecodeToken(value)
		}
		return e
	}
	if deleted {
		if pt, ok := strings.CutPrefix(e.Key, l.AuthGrantsPrefix()); ok {
			if p, t, ok := strings.Cut(pt, "/"); ok {
				e.IsGrant, e.Grant = true, GrantEntry{Principal: p, Table: t}
			}
		}
		return e
	}
	e.IsGrant = true
	e.Grant, e.Err = DecodeGrant(l, key, value)
	return e
}

// LoadAuth reads every key under auth/ and returns them decoded, with the
// revision of the read.
func LoadAuth(ctx context.Context, kv clientv3.KV, l Layout) ([]AuthEntry, int64, error) {
	return loadDecoded(ctx, kv, l.AuthPrefix(), "tokens and grants", func(key, value []byte) AuthEntry {
		return authEntry(l, key, value, false)
	})
}

// WatchAuth follows auth/ from revision from (requiring an etcd leader),
// one etcd answer at a time, until ctx ends or the watch fails (then it
// just ends: the caller loads again).
func WatchAuth(ctx context.Context, w clientv3.Watcher, l Layout, from int64) iter.Seq[[]AuthEntry] {
	return watchDecoded(ctx, w, l.AuthPrefix(), from, func(ev *clientv3.Event) AuthEntry {
		e := authEntry(l, ev.Kv.Key, ev.Kv.Value, ev.Type == clientv3.EventTypeDelete)
		e.Rev = ev.Kv.ModRevision
		return e
	})
}

// loadDecoded reads every key under prefix (what names them in errors),
// decoded by dec, with the revision of the read: the first step of a
// cache that then follows the prefix with watchDecoded.
func loadDecoded[T any](ctx context.Context, kv clientv3.KV, prefix, what string, dec func(key, value []byte) T) ([]T, int64, error) {
	resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("meta: reading %s: %w", what, err)
	}
	out := make([]T, 0, len(resp.Kvs))
	for _, e := range resp.Kvs {
		out = append(out, dec(e.Key, e.Value))
	}
	return out, resp.Header.Revision, nil
}

// watchDecoded follows prefix from revision from (requiring an etcd
// leader), each etcd answer's events decoded by dec, until ctx ends or
// the watch fails (then it just ends: the caller loads again).
func watchDecoded[T any](ctx context.Context, w clientv3.Watcher, prefix string, from int64, dec func(*clientv3.Event) T) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for resp := range w.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithRev(from)) {
			if resp.Err() != nil {
				return
			}
			es := make([]T, 0, len(resp.Events))
			for _, ev := range resp.Events {
				es = append(es, dec(ev))
			}
			if !yield(es) {
				return
			}
		}
	}
}
