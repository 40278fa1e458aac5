package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// Cache holds every token and grant of a cluster in memory, kept current
// by an etcd watch, so that checking a call reads no etcd.
type Cache struct {
	store  meta.Store
	layout meta.Layout
	log    *slog.Logger

	mu     sync.RWMutex
	tokens map[string]meta.TokenRecord // by id
	grants map[string]map[string]Role  // principal -> table -> role
	// rev is the etcd revision the maps reflect: a load's, or the last
	// watch change applied. A watch change at or below it is already in
	// the maps (a Sync read past the watch) and is skipped, so that the
	// maps never go back in time.
	rev    int64
	loaded chan struct{} // closed after the first load
	once   sync.Once

	// syncMu serializes Sync; syncStart is when the read of the last
	// completed Sync began. syncEvery spaces Syncs and syncTimeout bounds
	// one (minSyncInterval and maxSyncWait; tests shorten them).
	syncMu      sync.Mutex
	syncStart   time.Time
	syncEvery   time.Duration
	syncTimeout time.Duration
}

// minSyncInterval spaces the full reads Sync makes: callers with unknown
// tokens or missing roles cost etcd at most one read of auth/ per
// interval, however many they are.
const minSyncInterval = 100 * time.Millisecond

// maxSyncWait bounds one Sync's read, so that a refusal does not hang
// while etcd is away: the cached answer stands then.
const maxSyncWait = 2 * time.Second

// errUnknownToken: a well-formed token the cache does not hold.
var errUnknownToken = errors.New("auth: the token is not valid: it was revoked or mistyped; ask an admin for a new one (`tabula auth token create`)")

// errNotLoaded is returned while the first read of etcd has not finished.
var errNotLoaded = errors.New("auth: the credentials are not loaded from etcd yet; retry")

// NewCache returns a cache of the records under l's auth prefix in s. It
// answers "not loaded yet" until Run has read them; its owner runs Run in
// a goroutine it waits for before closing s.
func NewCache(s meta.Store, l meta.Layout, log *slog.Logger) *Cache {
	return &Cache{store: s, layout: l, log: log, loaded: make(chan struct{}),
		syncEvery: minSyncInterval, syncTimeout: maxSyncWait}
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

// Run loads everything, then applies watch events until ctx ends; when the
// watch breaks (etcd compacted past it, lost its leader, restarted) it
// loads again.
func (c *Cache) Run(ctx context.Context) {
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
		for changes := range meta.WatchAuth(ctx, c.store, c.layout, rev+1) {
			c.apply(changes)
		}
	}
}

func (c *Cache) load(ctx context.Context) (int64, error) {
	entries, rev, err := meta.LoadAuth(ctx, c.store, c.layout)
	if err != nil {
		return 0, err
	}
	tokens := map[string]meta.TokenRecord{}
	grants := map[string]map[string]Role{}
	for _, e := range entries {
		c.put(tokens, grants, e)
	}
	c.mu.Lock()
	if rev >= c.rev {
		c.tokens, c.grants, c.rev = tokens, grants, rev
	}
	c.mu.Unlock()
	c.once.Do(func() { close(c.loaded) })
	return rev, nil
}

// Sync brings the cache up to every token and grant committed in etcd
// before it was called, without waiting for the watch: an admin's call
// that created a token or a grant has returned, so the next call that
// uses it must be let in (docs/OPERATIONS.md "Security"). The guard calls
// it before refusing an unknown token or a missing role. Concurrent
// callers share one read of auth/, and reads are spaced by syncEvery; a
// Sync that began its read after this call began serves it.
func (c *Cache) Sync(ctx context.Context) error {
	called := time.Now()
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if c.syncStart.After(called) {
		return nil
	}
	if wait := time.Until(c.syncStart.Add(c.syncEvery)); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.syncTimeout)
	defer cancel()
	start := time.Now()
	if _, err := c.load(ctx); err != nil {
		return err
	}
	c.syncStart = start
	return nil
}

func (c *Cache) apply(changes []meta.AuthEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range changes {
		if e.Rev <= c.rev {
			continue // a Sync's read already has it
		}
		c.rev = e.Rev
		switch {
		case e.Deleted && e.IsToken:
			delete(c.tokens, e.ID)
		case e.Deleted && e.IsGrant:
			delete(c.grants[e.Grant.Principal], e.Grant.Table)
		case !e.Deleted:
			c.put(c.tokens, c.grants, e)
		}
	}
}

// put adds one record; a record it cannot decode is logged and skipped
// (it then grants nothing).
func (c *Cache) put(tokens map[string]meta.TokenRecord, grants map[string]map[string]Role, e meta.AuthEntry) {
	if e.IsToken {
		if e.Err != nil {
			c.log.Error("auth: skipping an unreadable token record", "key", e.Key, "err", e.Err)
			delete(tokens, e.ID)
			return
		}
		tokens[e.ID] = e.Token
		return
	}
	err := e.Err
	var g Grant
	if err == nil {
		g, err = grantOf(e.Grant)
	}
	if err != nil {
		c.log.Error("auth: skipping an unreadable grant record", "key", e.Key, "err", err)
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
		return "", errUnknownToken
	}
	return rec.Principal, nil
}

// RoleOn returns principal's role on table: the highest of its grant on
// the table, on the table's namespace ("ns:*", NamespaceGrant) and on
// AllTables.
func (c *Cache) RoleOn(principal, table string) Role {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g := c.grants[principal]
	r := max(g[table], g[AllTables])
	if table != AllTables {
		ns, _ := cell.SplitTableName(table)
		r = max(r, g[NamespaceGrant(ns)])
	}
	return r
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
