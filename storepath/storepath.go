// Package storepath names the folders of tables and tablets under a storage
// root, and removes them only after checking that the target is exactly
// such a folder, strictly inside the root.
//
// Every path built from a table name or a tablet id goes through here: a
// name that is not one plain path element ("." "..", a separator) is
// refused before it becomes a path, and a removal checks the resolved path
// once more, so no input can make Tabula delete the root or anything
// outside its tables folder.
//
//	dir, err := storepath.Tablet(root, "users", "a1b2c3")  // <root>/tables/users/a1b2c3
//	err = storepath.RemoveTable(fsys, root, "users")        // <root>/tables/users, nothing else
package storepath

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/vfs"
)

// TablesFolder is the folder under the root that holds one folder per table.
const TablesFolder = "tables"

// LogsFolder is the folder under the root that holds the tablet servers'
// shared commit logs, one folder per log (sharedlog.Dir).
const LogsFolder = "logs"

// ValidateTabletID checks a tablet id: 1 to 64 characters of
// [A-Za-z0-9_.-], starting with a letter, digit or underscore (so never
// "." or "..").
func ValidateTabletID(id string) error {
	if len(id) == 0 || len(id) > 64 || !plainStart(id[0]) {
		return cell.Invalidf("tablet id %q must be 1 to 64 characters of A-Z a-z 0-9 _ . - starting with a letter, digit or _", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(plainStart(c) || c == '.' || c == '-') {
			return cell.Invalidf("tablet id %q must be 1 to 64 characters of A-Z a-z 0-9 _ . -", id)
		}
	}
	return nil
}

func plainStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// Tables returns <root>/tables.
func Tables(root string) string { return filepath.Join(root, TablesFolder) }

// Logs returns <root>/logs.
func Logs(root string) string { return filepath.Join(root, LogsFolder) }

// Table returns <root>/tables/<table> after validating the name.
func Table(root, table string) (string, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return "", err
	}
	dir := filepath.Join(Tables(root), table)
	if err := check(root, dir, 2); err != nil {
		return "", err
	}
	return dir, nil
}

// Tablet returns <root>/tables/<table>/<id> after validating both names.
func Tablet(root, table, id string) (string, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return "", err
	}
	if err := ValidateTabletID(id); err != nil {
		return "", err
	}
	dir := filepath.Join(Tables(root), table, id)
	if err := check(root, dir, 3); err != nil {
		return "", err
	}
	return dir, nil
}

// RemoveTable deletes a table's folder and everything in it from fsys.
func RemoveTable(fsys vfs.FS, root, table string) error {
	dir, err := Table(root, table)
	if err != nil {
		return err
	}
	return vfs.Or(fsys).RemoveAll(dir)
}

// RemoveTablet deletes a tablet's folder and everything in it from fsys.
func RemoveTablet(fsys vfs.FS, root, table, id string) error {
	dir, err := Tablet(root, table, id)
	if err != nil {
		return err
	}
	return vfs.Or(fsys).RemoveAll(dir)
}

// RemoveTabletDir deletes dir if it is a tablet folder under root (as
// Tablet builds them); the split and GC code hold folders as paths.
func RemoveTabletDir(fsys vfs.FS, root, dir string) error {
	if err := check(root, dir, 3); err != nil {
		return err
	}
	rel, _ := filepath.Rel(Tables(root), filepath.Clean(dir))
	parts := strings.Split(rel, string(filepath.Separator))
	return RemoveTablet(fsys, root, parts[0], parts[1])
}

// check verifies that dir is exactly depth elements below root, inside
// <root>/tables, with no element that climbs or stays.
func check(root, dir string, depth int) error {
	if root == "" {
		return fmt.Errorf("storepath: the storage root is empty")
	}
	rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("storepath: %s is not under the storage root %s: %w", dir, root, err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) != depth || parts[0] != TablesFolder {
		return fmt.Errorf("storepath: refusing %s: not a %s folder under %s", dir, map[int]string{2: "table", 3: "tablet"}[depth], Tables(root))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("storepath: refusing %s: path element %q", dir, p)
		}
	}
	return nil
}
