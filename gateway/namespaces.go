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
type namespaces struct {
	// defaultID is Options.InstanceID, always the default namespace.
	defaultID string
	list      func(ctx context.Context) ([]string, error)
	ttl       time.Duration
	now       func() time.Time

	mu     sync.Mutex
	known  map[string]bool
	loaded time.Time
}

// namespaceTTL is how stale the cache may be before a miss reads it again.
const namespaceTTL = 2 * time.Second

// of returns the namespace of instance id.
func (n *namespaces) of(ctx context.Context, instance string) (string, error) {
	if instance == cell.DefaultNamespace || instance == n.defaultID || cell.ValidateNamespaceName(instance) != nil {
		return cell.DefaultNamespace, nil // "{{instance}}" and the like: never a namespace
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.known[instance] && (n.known == nil || n.now().Sub(n.loaded) >= n.ttl) {
		if err := n.loadLocked(ctx); err != nil {
			return "", err
		}
	}
	if n.known[instance] {
		return instance, nil
	}
	return cell.DefaultNamespace, nil
}

func (n *namespaces) loadLocked(ctx context.Context) error {
	names, err := n.list(ctx)
	if status.Code(err) == codes.Unimplemented {
		names, err = nil, nil // a cluster from before namespaces: every instance is the default namespace
	}
	if err != nil {
		return toStatus(err)
	}
	known := make(map[string]bool, len(names))
	for _, name := range names {
		if name != cell.DefaultNamespace {
			known[name] = true
		}
	}
	n.known, n.loaded = known, n.now()
	return nil
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
