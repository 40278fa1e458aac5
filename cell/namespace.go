package cell

import "strings"

// Namespaces group tables as HBase's do (docs/OPERATIONS.md "Namespaces"):
// a table "NS:NAME" is in namespace NS, a table without a colon in the
// default namespace. The default namespace's tables keep the plain names
// they had before namespaces existed, so an existing cluster's etcd keys
// and storage folders need no migration.

// DefaultNamespace is the namespace of tables named without a prefix.
const DefaultNamespace = "default"

// MaxNamespaceLen is the longest namespace name: 33 characters, the
// longest Cloud Bigtable instance id, since a Bigtable instance is a
// namespace in the gateway (docs/GATEWAY.md).
const MaxNamespaceLen = 33

// ValidateNamespaceName checks a namespace name: 1 to 33 characters of
// A-Z a-z 0-9 _ -, starting with a letter, digit or _. No '.' and no ':',
// so "NS:NAME" splits at its one colon.
func ValidateNamespaceName(ns string) error {
	if msg := namespaceProblem(ns); msg != "" {
		return Invalidf("%s", msg)
	}
	return nil
}

// namespaceProblem says what is wrong with ns, or "".
func namespaceProblem(ns string) string {
	ok := len(ns) > 0 && len(ns) <= MaxNamespaceLen && ns[0] != '-'
	for i := 0; ok && i < len(ns); i++ {
		c := ns[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
	}
	if !ok {
		return "namespace name \"" + ns + "\" must be 1 to 33 characters of A-Z a-z 0-9 _ - starting with a letter, digit or _"
	}
	return ""
}

// SplitTableName returns the namespace and the name within it of a table
// name: ("default", name) for a name without a colon.
func SplitTableName(table string) (ns, name string) {
	if ns, name, ok := strings.Cut(table, ":"); ok {
		return ns, name
	}
	return DefaultNamespace, table
}

// QualifiedTableName is the table name of name in namespace ns: name alone
// in the default namespace, else "ns:name".
func QualifiedTableName(ns, name string) string {
	if ns == DefaultNamespace || ns == "" {
		return name
	}
	return ns + ":" + name
}

// CanonicalTableName strips "default:", which names the same table as the
// bare name (as in HBase). Clients call it on every name a caller gives;
// the servers accept only the canonical form.
func CanonicalTableName(table string) string {
	if name, ok := strings.CutPrefix(table, DefaultNamespace+":"); ok {
		return name
	}
	return table
}

// NamespaceTablePrefix is the prefix every table name of namespace ns
// starts with ("ns:"), or "" for the default namespace, whose tables are
// those without a colon.
func NamespaceTablePrefix(ns string) string {
	if ns == DefaultNamespace {
		return ""
	}
	return ns + ":"
}

// InNamespace reports whether table is in namespace ns.
func InNamespace(table, ns string) bool {
	got, _ := SplitTableName(table)
	return got == ns
}
