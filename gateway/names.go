package gateway

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/cell"
)

// instanceName is a parsed "projects/P/instances/I".
type instanceName struct{ project, instance string }

func (n instanceName) String() string {
	return "projects/" + n.project + "/instances/" + n.instance
}

// tableName is a parsed "projects/P/instances/I/tables/T".
type tableName struct {
	instanceName
	// id is T, the Bigtable table id.
	id string
	// table is the Tabula table: T in the default namespace, "I:T" when
	// instance I is a namespace (namespaces.go). parseTable sets T;
	// Server.parseTable maps it.
	table string
}

func (n tableName) String() string { return n.instanceName.String() + "/tables/" + n.id }

// parseInstance parses "projects/P/instances/I". Project and instance ids
// are not checked beyond being non-empty path segments: an instance that is
// not a namespace maps to the default one (namespaces.go).
func parseInstance(field, name string) (instanceName, error) {
	p := strings.Split(name, "/")
	if len(p) != 4 || p[0] != "projects" || p[2] != "instances" || !segment(p[1]) || !segment(p[3]) {
		return instanceName{}, status.Errorf(codes.InvalidArgument,
			"%s %q is not a valid instance name: expected projects/<project>/instances/<instance>", field, name)
	}
	return instanceName{project: p[1], instance: p[3]}, nil
}

// parseTable parses "projects/P/instances/I/tables/T" and checks the table
// id is a valid Tabula table name without a namespace (a ':' in it would
// reach another instance's tables).
func parseTable(field, name string) (tableName, error) {
	p := strings.Split(name, "/")
	if len(p) != 6 || p[4] != "tables" {
		return tableName{}, status.Errorf(codes.InvalidArgument,
			"%s %q is not a valid table name: expected projects/<project>/instances/<instance>/tables/<table>", field, name)
	}
	in, err := parseInstance(field, strings.Join(p[:4], "/"))
	if err != nil {
		return tableName{}, status.Errorf(codes.InvalidArgument,
			"%s %q is not a valid table name: expected projects/<project>/instances/<instance>/tables/<table>", field, name)
	}
	if strings.Contains(p[5], ":") {
		return tableName{}, status.Errorf(codes.InvalidArgument,
			"%s %q: a table id has no ':'; the instance is the table's namespace (docs/GATEWAY.md \"Names and instances\")", field, name)
	}
	if err := cell.ValidateTableName(p[5]); err != nil {
		return tableName{}, status.Errorf(codes.InvalidArgument, "%s %q: %v", field, name, trimInvalid(err))
	}
	return tableName{instanceName: in, id: p[5], table: p[5]}, nil
}

// segment reports whether s can be one path segment of a resource name:
// any non-empty string without a '/'. Google's emulator checks no more
// (it only splits names at '/'), and clients rely on that: the Node.js
// client without a project id sends the literal "{{projectId}}".
func segment(s string) bool { return s != "" && !strings.Contains(s, "/") }
