package quota

import "strings"

// DefaultNamespace holds the tables whose names have no namespace.
const DefaultNamespace = "default"

// NamespaceOf returns the namespace of a table: the part of NS:TABLE
// before the first ':', or DefaultNamespace for an unqualified name
// (HBase's rule, which the namespaces of docs/OPERATIONS.md follow).
func NamespaceOf(table string) string {
	if ns, _, ok := strings.Cut(table, ":"); ok && ns != "" {
		return ns
	}
	return DefaultNamespace
}
