package manifest

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tabuladb/tabula/vfs"
)

// ErrNoTablet means a tablet folder holds no manifest: its files are gone
// (deleted, or the storage root is not the one the tablet was written to),
// or, on an object store, a listing does not show the manifest yet. The
// engine's tablet.ErrNoTablet is this sentinel.
var ErrNoTablet = errors.New("manifest: no tablet in this folder")

// Refs is what a tablet folder's manifest needs from outside the folder.
type Refs struct {
	// Files are the referenced files of other tablet folders (see
	// Referenced).
	Files []string
	// Log is the shared commit log holding the tablet's unflushed
	// records ("" if none: its own log).
	Log string
}

// References reads what the manifest of the tablet folder dir on fsys
// references outside the folder. A folder in which no manifest is listed
// gives an error wrapping ErrNoTablet, never "nothing": it may be a split
// child whose manifest an object store's listing does not show yet, and
// the caller is deciding whether a parent's files may be deleted. It only
// reads the manifest, so the master's GC reads references without the
// engine (docs/ARCHITECTURE.md: the master never opens tablets).
func References(fsys vfs.FS, dir string) (Refs, error) {
	st, found, err := Load(fsys, dir)
	if err != nil {
		return Refs{}, err
	}
	if !found {
		return Refs{}, fmt.Errorf("%w: %s: no manifest listed, so what it references cannot be told (a folder being made, or a listing that lags)", ErrNoTablet, dir)
	}
	r := Refs{Log: st.Log}
	for _, f := range st.Files {
		if !IsOwnPath(f.Path) {
			r.Files = append(r.Files, filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
	}
	return r, nil
}

// Referenced lists the files outside the tablet folder dir on fsys that
// its manifest references (a split child's references to its parent's
// files), as paths joined to dir and cleaned. A parent folder may be
// deleted when no child lists any of its files.
func Referenced(fsys vfs.FS, dir string) ([]string, error) {
	r, err := References(fsys, dir)
	return r.Files, err
}

// IsOwnPath reports whether a path in a manifest (FileRef.Path, relative
// to the tablet folder) stays inside the tablet folder; any other path
// references another tablet's file.
func IsOwnPath(rel string) bool {
	c := filepath.Clean(filepath.FromSlash(rel))
	return !filepath.IsAbs(c) && c != ".." && !strings.HasPrefix(c, ".."+string(filepath.Separator))
}
