package gateway

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
)

// A Bigtable instance is a Tabula namespace (docs/GATEWAY.md "Names and
// instances"): instance I maps to namespace I when that namespace exists,
// and every other instance id, "default" and Options.InstanceID (always)
// included, to the default namespace, where tables are named without a prefix. So
// the applications that used arbitrary instance ids before namespaces
// existed keep their tables, and an instance created (CreateInstance, or
// `tabula namespace create`) keeps its tables apart from every other's.

// namespaces caches which namespaces exist, so that mapping an instance
// costs no call on the data path. It is read again when older than ttl
// and a name is not in it (so a namespace created elsewhere is seen
// within ttl), and updated at once by this gateway's own CreateInstance
// and DeleteInstance.
//
// Once read, the cache never stops the data path: one caller reads it
// again while the others answer from it, and a read that fails (no
// master) keeps it until the next try, ttl later. A namespace is made
// by the master, so one unseen through an outage was made at most about
// ttl before it: the same window as when every read succeeds. Only the
// first read, with nothing to answer from, fails the calls that wait
// for it.
type namespaces struct {
	// defaultID is Options.InstanceID, always the default namespace.
	defaultID string
	list      func(ctx context.Context) ([]string, error)
	ttl       time.Duration
	now       func() time.Time

	mu      sync.Mutex
	known   map[string]bool
	loaded  time.Time
	loading chan struct{} // closed when the read in flight ends; nil if none
}

// namespaceTTL is how stale the cache may be before a miss reads it again.
const namespaceTTL = 2 * time.Second

// of returns the namespace of instance id.
func (n *namespaces) of(ctx context.Context, instance string) (string, error) {
	if instance == cell.DefaultNamespace || instance == n.defaultID || cell.ValidateNamespaceName(instance) != nil {
		return cell.DefaultNamespace, nil // "{{instance}}" and the like: never a namespace
	}
	for {
		n.mu.Lock()
		switch {
		case n.known[instance]:
			n.mu.Unlock()
			return instance, nil
		case n.known != nil && (n.loading != nil || n.now().Sub(n.loaded) < n.ttl):
			n.mu.Unlock() // fresh enough, or another caller is reading it
			return cell.DefaultNamespace, nil
		case n.loading != nil: // the first read, in flight
			wait := n.loading
			n.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return "", toStatus(ctx.Err())
			}
		}
		done := make(chan struct{})
		n.loading = done
		n.mu.Unlock()
		known, err := n.read(ctx)
		n.mu.Lock()
		n.loading = nil
		close(done)
		if err == nil {
			n.known = known
		}
		if n.known != nil {
			n.loaded = n.now() // a failed read is tried again after ttl
		}
		n.mu.Unlock()
		if err != nil && n.loadedNever() {
			return "", err
		}
	}
}

// loadedNever reports whether no read of the namespaces has succeeded.
func (n *namespaces) loadedNever() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.known == nil
}

// read lists the namespaces other than the default one.
func (n *namespaces) read(ctx context.Context) (map[string]bool, error) {
	names, err := n.list(ctx)
	if status.Code(err) == codes.Unimplemented {
		names, err = nil, nil // a cluster from before namespaces: every instance is the default namespace
	}
	if err != nil {
		return nil, toStatus(err)
	}
	known := make(map[string]bool, len(names))
	for _, name := range names {
		if name != cell.DefaultNamespace {
			known[name] = true
		}
	}
	return known, nil
}

// set records that namespace name exists (or not), after this gateway
// created or deleted it.
func (n *namespaces) set(name string, exists bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.known == nil {
		return // not loaded yet: the first use reads it
	}
	if exists {
		n.known[name] = true
	} else {
		delete(n.known, name)
	}
}

// resolve maps a parsed table name to its Tabula table.
func (s *Server) resolve(ctx context.Context, n tableName) (tableName, error) {
	ns, err := s.ns.of(ctx, n.instance)
	if err != nil {
		return n, err
	}
	n.table = cell.QualifiedTableName(ns, n.id)
	return n, nil
}

// parseTable parses and maps a table's resource name (names.go, resolve).
func (s *Server) parseTable(ctx context.Context, field, name string) (tableName, error) {
	n, err := parseTable(field, name)
	if err != nil {
		return n, err
	}
	return s.resolve(ctx, n)
}

// listNamespaces is namespaces.list for the Tabula client.
func (s *Server) listNamespaces(ctx context.Context) ([]string, error) {
	nss, err := s.c.Admin().ListNamespaces(ctx)
	var out []string
	for _, n := range nss {
		out = append(out, n.Name)
	}
	return out, err
}
