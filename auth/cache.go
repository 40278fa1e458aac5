package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/meta"
)

// Cache holds every token and grant of a cluster in memory, kept current
// by an etcd watch, so that checking a call reads no etcd.
type Cache struct {
	kv     clientv3.KV
	w      clientv3.Watcher
	layout meta.Layout
	log    *slog.Logger

	mu     sync.RWMutex
	tokens map[string]tokenRecord     // by id
	grants map[string]map[string]Role // principal -> table -> role
	loaded chan struct{}              // closed after the first load
	once   sync.Once
}

// errNotLoaded is returned while the first read of etcd has not finished.
var errNotLoaded = errors.New("the credentials are not loaded from etcd yet; retry")

// NewCache starts loading and watching the records under l's auth prefix;
// it stops when ctx ends.
func NewCache(ctx context.Context, kv clientv3.KV, w clientv3.Watcher, l meta.Layout, log *slog.Logger) *Cache {
	c := &Cache{kv: kv, w: w, layout: l, log: log, loaded: make(chan struct{})}
	go c.run(ctx)
	return c
}

// Wait blocks until the first load finished or ctx ends.
func (c *Cache) Wait(ctx context.Context) error {
	select {
	case <-c.loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("auth: loading tokens and grants from etcd: %w", ctx.Err())
	}
}

// run loads everything, then applies watch events; when the watch breaks
// (etcd compacted past it, lost its leader, restarted) it loads again.
func (c *Cache) run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		rev, err := c.load(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("auth: loading tokens and grants", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		wch := c.w.Watch(clientv3.WithRequireLeader(ctx), c.layout.AuthPrefix(), clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		for resp := range wch {
			if resp.Err() != nil {
				break
			}
			c.apply(resp.Events)
		}
	}
}

func (c *Cache) load(ctx context.Context) (int64, error) {
	resp, err := c.kv.Get(ctx, c.layout.AuthPrefix(), clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	tokens := map[string]tokenRecord{}
	grants := map[string]map[string]Role{}
	for _, kv := range resp.Kvs {
		c.put(tokens, grants, kv.Key, kv.Value)
	}
	c.mu.Lock()
	c.tokens, c.grants = tokens, grants
	c.mu.Unlock()
	c.once.Do(func() { close(c.loaded) })
	return resp.Header.Revision, nil
}

func (c *Cache) apply(events []*clientv3.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range events {
		key := string(ev.Kv.Key)
		if ev.Type == clientv3.EventTypeDelete {
			if id, ok := strings.CutPrefix(key, c.layout.AuthTokensPrefix()); ok {
				delete(c.tokens, id)
			} else if pt, ok := strings.CutPrefix(key, c.layout.AuthGrantsPrefix()); ok {
				if p, t, ok := strings.Cut(pt, "/"); ok {
					delete(c.grants[p], t)
				}
			}
			continue
		}
		c.put(c.tokens, c.grants, ev.Kv.Key, ev.Kv.Value)
	}
}

// put adds one record; a record it cannot decode is logged and skipped
// (it then grants nothing).
func (c *Cache) put(tokens map[string]tokenRecord, grants map[string]map[string]Role, key, value []byte) {
	if id, ok := strings.CutPrefix(string(key), c.layout.AuthTokensPrefix()); ok {
		var rec tokenRecord
		if err := json.Unmarshal(value, &rec); err != nil {
			c.log.Error("auth: skipping an unreadable token record", "key", string(key), "err", err)
			delete(tokens, id)
			return
		}
		tokens[id] = rec
		return
	}
	g, err := decodeGrant(c.layout, key, value)
	if err != nil {
		c.log.Error("auth: skipping an unreadable grant record", "key", string(key), "err", err)
		return
	}
	if grants[g.Principal] == nil {
		grants[g.Principal] = map[string]Role{}
	}
	grants[g.Principal][g.Table] = g.Role
}

// Authenticate returns the principal a token stands for.
func (c *Cache) Authenticate(token string) (string, error) {
	id, secret, err := parseToken(token)
	if err != nil {
		return "", err
	}
	select {
	case <-c.loaded:
	default:
		return "", errNotLoaded
	}
	c.mu.RLock()
	rec, ok := c.tokens[id]
	c.mu.RUnlock()
	if !ok || !secretMatches(secret, rec.SHA256) {
		return "", errors.New("the token is not valid: it was revoked or mistyped; ask an admin for a new one (`tabula auth token create`)")
	}
	return rec.Principal, nil
}

// RoleOn returns principal's role on table: the higher of its grant on
// the table and its grant on AllTables.
func (c *Cache) RoleOn(principal, table string) Role {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.grants[principal]
	return max(g[table], g[AllTables])
}

// Grants returns principal's grants, sorted by table.
func (c *Cache) Grants(principal string) []Grant {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []Grant
	for t, r := range c.grants[principal] {
		out = append(out, Grant{Principal: principal, Table: t, Role: r})
	}
	sortGrants(out)
	return out
}
