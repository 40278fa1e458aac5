package filecache

import "github.com/tabuladb/tabula/vfs"

// WithWholeFiles returns f, passing on the whole-file calls of the FS it
// caches (vfs.WholeFiles: an object store's one-request writes, reads and
// removals, which the manifest uses) when that FS has them; without this
// the cache would hide them and every manifest save under it would go
// back to a temporary object, a COPY and a DELETE. Whole files are not
// cached (only Cacheable names are, and those are opened with Open); a
// whole file written or removed drops any copy of its name.
func (f *FS) WithWholeFiles() vfs.FS {
	if w, ok := f.FS.(vfs.WholeFiles); ok {
		return wholeFS{f, w}
	}
	return f
}

type wholeFS struct {
	*FS
	w vfs.WholeFiles
}

var (
	_ vfs.WholeFiles = wholeFS{}
	_ vfs.SizedFiles = (*FS)(nil)
)

func (c wholeFS) WriteWhole(name string, b []byte) error {
	c.forget(name)
	return c.w.WriteWhole(name, b)
}

func (c wholeFS) ReadWhole(name string) ([]byte, error) { return c.w.ReadWhole(name) }

func (c wholeFS) RemoveWhole(names []string) error {
	for _, n := range names {
		c.forget(n)
	}
	return c.w.RemoveWhole(names)
}
