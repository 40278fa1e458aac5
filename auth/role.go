package auth

import (
	"fmt"
	"regexp"
)

// Role is what a principal may do on a table. Roles are ordered: each
// includes the ones below it.
type Role int

const (
	// None grants nothing.
	None Role = iota
	// Read may read rows and describe and locate the table.
	Read
	// Write may also write rows.
	Write
	// Admin may also change the table's schema, compact, split and
	// delete it; on "*" it also manages tokens, grants and the cluster.
	Admin
)

// AllTables is the table name of a cluster-wide grant.
const AllTables = "*"

// NamespaceGrant is the table name of a grant on every table of namespace
// ns, present and future: "ns:*" ("default:*" for the tables named without
// a prefix), as `tabula auth grant P ns:* read` writes it.
func NamespaceGrant(ns string) string { return ns + ":*" }

// Reserved identities: the common names in the certificates of the
// cluster's own processes. A token can never be issued for them, and no
// caller can act for them (ActingForKey).
const (
	MasterName       = "tabula-master"
	TabletServerName = "tabula-tabletserver"
	// GatewayName is the Bigtable gateway's identity: a caller whose
	// verified certificate has this common name may act for another
	// principal (ActingForKey; docs/OPERATIONS.md "Security"), so the
	// gateway can run a call as the Bigtable client whose certificate it
	// verified. Whoever holds such a certificate can act as any
	// principal that is not reserved: the CA issues it to gateways only.
	GatewayName = "tabula-gateway"
)

func (r Role) String() string {
	switch r {
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	}
	return "none"
}

// ParseRole parses "read", "write" or "admin".
func ParseRole(s string) (Role, error) {
	switch s {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return None, fmt.Errorf("auth: unknown role %q: use read, write or admin", s)
}

var principalRE = regexp.MustCompile(`^[A-Za-z0-9_@][A-Za-z0-9_.@-]{0,127}$`)

// ValidatePrincipal checks a principal name: 1 to 128 characters of
// [A-Za-z0-9_.@-], not starting with '.' or '-' (a name is an etcd key
// element and appears in certificates and logs).
func ValidatePrincipal(name string) error {
	if !principalRE.MatchString(name) {
		return fmt.Errorf("auth: principal %q is not valid: use 1 to 128 characters of letters, digits, '_', '.', '@' and '-', starting with a letter, digit, '_' or '@'", name)
	}
	return nil
}

// reserved reports whether name is one of the cluster's own identities.
func reserved(name string) bool {
	return name == MasterName || name == TabletServerName || name == GatewayName
}
