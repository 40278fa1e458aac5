package quota

import "github.com/tabuladb/tabula/cell"

// NamespaceOf returns the namespace of a table: NS for "NS:TABLE",
// cell.DefaultNamespace for an unqualified name (docs/OPERATIONS.md
// "Namespaces").
func NamespaceOf(table string) string {
	ns, _ := cell.SplitTableName(table)
	return ns
}
