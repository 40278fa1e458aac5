package meta

import "strings"

// DefaultCluster is the cluster name used when none is given.
const DefaultCluster = "default"

// Layout names the etcd keys of one cluster. Its Prefix ends with "/".
type Layout struct {
	// Prefix is prepended to every key, e.g. "/tabula/default/".
	Prefix string
}

// NewLayout returns the layout of cluster under "/tabula/<cluster>/". An
// empty cluster means DefaultCluster.
func NewLayout(cluster string) Layout {
	if cluster == "" {
		cluster = DefaultCluster
	}
	return Layout{Prefix: "/tabula/" + cluster + "/"}
}

// WithPrefix returns the layout rooted at prefix (a "/" is appended if it
// is missing). An empty prefix means NewLayout(DefaultCluster).
func WithPrefix(prefix string) Layout {
	if prefix == "" {
		return NewLayout("")
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Layout{Prefix: prefix}
}

func (l Layout) root() string {
	if l.Prefix == "" {
		return NewLayout("").Prefix
	}
	return l.Prefix
}

// ElectionPrefix is the prefix of the masters' Election (election.go),
// whose keys are those of etcd's concurrency.Election.
func (l Layout) ElectionPrefix() string { return l.root() + "master/election/" }

// AuthTokensPrefix is the prefix of the bearer token records (auth
// package).
func (l Layout) AuthTokensPrefix() string { return l.root() + "auth/tokens/" }

// AuthTokenKey is the key of the token whose id is id.
func (l Layout) AuthTokenKey(id string) string { return l.AuthTokensPrefix() + id }

// AuthGrantsPrefix is the prefix of every grant.
func (l Layout) AuthGrantsPrefix() string { return l.root() + "auth/grants/" }

// AuthGrantKey is the key of principal's grant on table ("*": all).
func (l Layout) AuthGrantKey(principal, table string) string {
	return l.AuthGrantsPrefix() + principal + "/" + table
}

// AuthPrefix holds both tokens and grants.
func (l Layout) AuthPrefix() string { return l.root() + "auth/" }

// ServersPrefix is the prefix of every live tablet server's key.
func (l Layout) ServersPrefix() string { return l.root() + "servers/" }

// ServerKey is the key of tablet server id.
func (l Layout) ServerKey(id string) string { return l.ServersPrefix() + id }

// TablesPrefix is the prefix of every table's schema key.
func (l Layout) TablesPrefix() string { return l.root() + "tables/" }

// TableKey is the key of table name's schema.
func (l Layout) TableKey(name string) string { return l.TablesPrefix() + name }

// AllTabletsPrefix is the prefix of every tablet of every table.
func (l Layout) AllTabletsPrefix() string { return l.root() + "tablets/" }

// TabletsPrefix is the prefix of every tablet of table.
func (l Layout) TabletsPrefix(table string) string { return l.AllTabletsPrefix() + table + "/" }

// TabletKey is the key of tablet id of table.
func (l Layout) TabletKey(table, id string) string { return l.TabletsPrefix(table) + id }

// AssignmentsPrefix is the prefix of every server's assignments: the
// record of each assigned tablet mirrored under its owner (AssignmentKey).
func (l Layout) AssignmentsPrefix() string { return l.root() + "assignments/" }

// ServerAssignmentsPrefix is the prefix of the tablets assigned to server
// id: what that server reads at start and watches (docs/CONTRACTS.md §4).
func (l Layout) ServerAssignmentsPrefix(id string) string {
	return l.AssignmentsPrefix() + id + "/"
}

// AssignmentKey mirrors tablets/<table>/<tablet> while the record names
// server as its owner.
func (l Layout) AssignmentKey(server, table, tablet string) string {
	return l.ServerAssignmentsPrefix(server) + table + "/" + tablet
}

// AssignmentsReadyKey exists once every assigned tablet has its mirror
// under assignments/: written by the leading master after it filled in
// the mirrors of a cluster upgraded in place (RepairAssignments). Before
// it, a tablet server reads and follows the whole of tablets/.
func (l Layout) AssignmentsReadyKey() string { return l.root() + "layout/assignments" }

// ServerIDFromKey returns the server id of a key under ServersPrefix.
func (l Layout) ServerIDFromKey(key string) (id string, ok bool) {
	id, ok = strings.CutPrefix(key, l.ServersPrefix())
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// TableFromKey returns the table name of a key under TablesPrefix.
func (l Layout) TableFromKey(key string) (name string, ok bool) {
	name, ok = strings.CutPrefix(key, l.TablesPrefix())
	return name, ok && name != "" && !strings.Contains(name, "/")
}

// TabletFromKey returns the table and tablet id of a key under
// AllTabletsPrefix.
func (l Layout) TabletFromKey(key string) (table, id string, ok bool) {
	return tableAndTablet(key, l.AllTabletsPrefix())
}

// tableAndTablet splits key, under prefix, into <table>/<id>.
func tableAndTablet(key, prefix string) (table, id string, ok bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", "", false
	}
	table, id, ok = strings.Cut(rest, "/")
	return table, id, ok && table != "" && id != "" && !strings.Contains(id, "/")
}

// TabletFromAssignmentKey returns the table and tablet id of a key under
// ServerAssignmentsPrefix(server).
func (l Layout) TabletFromAssignmentKey(server, key string) (table, id string, ok bool) {
	return tableAndTablet(key, l.ServerAssignmentsPrefix(server))
}

// BalancerKey holds the cluster's balancer switch: "on" or "off"; absent
// means on (docs/OPERATIONS.md "Balancing").
func (l Layout) BalancerKey() string { return l.root() + "balancer" }

// NamespacesPrefix is the prefix of every namespace's record; the default
// namespace has none (it always exists).
func (l Layout) NamespacesPrefix() string { return l.root() + "namespaces/" }

// NamespaceKey is the key of namespace ns's record.
func (l Layout) NamespaceKey(ns string) string { return l.NamespacesPrefix() + ns }

// NamespaceTablesPrefix is the prefix of the schema keys of namespace ns's
// tables ("tables/ns:"), ns not the default namespace.
func (l Layout) NamespaceTablesPrefix(ns string) string { return l.TablesPrefix() + ns + ":" }
