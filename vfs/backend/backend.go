// Package backend turns a storage setting into a file system: a local
// path (the default: today's storage root on a disk or a shared mount) or
// an object store URL, s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT,
// with credentials from the usual AWS_* variables (vfs/s3fs).
//
//	fsys, root, err := backend.Open(ctx, "s3://tabula/prod?endpoint=http://10.0.0.5:8333", "/var/cache/tabula")
package backend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/filecache"
	"github.com/tabuladb/tabula/vfs/s3fs"
)

// ObjectRoot is the path under which an object store's files appear to
// the engine; keys are the paths below it, after the URL's prefix.
const ObjectRoot = "/tabula-objects"

// IsURL reports whether spec names an object store rather than a path.
func IsURL(spec string) bool { return strings.Contains(spec, "://") }

// Open returns the file system spec names and the root path to use on it.
// For an object store, spoolDir (a local folder of this process) holds the
// temporary files of uploads; the store is checked now (bucket, write
// permission), so a wrong setting fails at start with a clear error.
func Open(ctx context.Context, spec, spoolDir string) (vfs.FS, string, error) {
	if !IsURL(spec) {
		if spec == "" {
			return nil, "", errors.New("backend: no storage root given")
		}
		abs, err := filepath.Abs(spec)
		if err != nil {
			return nil, "", fmt.Errorf("backend: storage root: %w", err)
		}
		return vfs.Default, abs, nil
	}
	cfg, err := s3fs.ParseURL(spec, os.Getenv)
	if err != nil {
		return nil, "", err // it names the package and the URL
	}
	if spoolDir != "" {
		if err := os.MkdirAll(spoolDir, 0o755); err != nil {
			return nil, "", fmt.Errorf("backend: spool folder: %w", err)
		}
	}
	cfg.Root, cfg.SpoolDir = ObjectRoot, spoolDir
	f, err := s3fs.Open(ctx, cfg)
	if err != nil {
		return nil, "", fmt.Errorf("backend: storage %s: %w", redact(spec), err)
	}
	return f, ObjectRoot, nil
}

// redact drops anything after '?' but the endpoint, in case a user put a
// secret in the URL.
func redact(spec string) string {
	if i := strings.IndexByte(spec, '?'); i >= 0 {
		return spec[:i] + "?..."
	}
	return spec
}

// WithFileCache puts a bounded local cache of SSTables (vfs/filecache) in
// dir over fsys: a block cache miss then reads a local copy instead of
// making a ranged GET. SSTables are the one kind of tablet file that is
// never rewritten, so they are the ones a copy can be kept of. The
// object store's whole-file calls (vfs.WholeFiles) pass through.
func WithFileCache(fsys vfs.FS, dir string, maxBytes int64) (vfs.FS, error) {
	c, err := filecache.New(fsys, filecache.Options{Dir: dir, MaxBytes: maxBytes,
		Cacheable: func(name string) bool { return strings.HasSuffix(name, ".sst") }})
	if err != nil {
		return nil, err
	}
	return c.WithWholeFiles(), nil
}

// Requests returns the requests fsys sent to its object store so far, by
// kind (s3fs.FS.Requests), seeing through the file cache; false for a
// file system that is not on an object store. The tablet server exports
// them (tabula_tabletserver_store_requests_total), and `tabula bench
// --store-metrics` turns them into requests per tablet load and per 1,000
// operations.
func Requests(fsys vfs.FS) (s3fs.Requests, bool) {
	for {
		switch f := fsys.(type) {
		case *s3fs.FS:
			return f.Requests(), true
		case interface{ Unwrap() vfs.FS }:
			fsys = f.Unwrap()
		default:
			return s3fs.Requests{}, false
		}
	}
}
