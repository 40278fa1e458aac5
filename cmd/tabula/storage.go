package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/backend"
)

// serverStorage is a tablet server's storage: the object store of
// --storage (its uploads spooled under --data, SSTables cached in
// --data/cache up to --file-cache-size), else the local root --data.
func serverStorage(ctx context.Context, v *viper.Viper) (vfs.FS, string, error) {
	spec := v.GetString("storage")
	if spec == "" {
		return backend.Open(ctx, v.GetString("data"), "")
	}
	if !backend.IsURL(spec) {
		return nil, "", fmt.Errorf("--storage %q is not an object store URL (s3://BUCKET[/PREFIX]?endpoint=...); a local storage root goes in --data", spec)
	}
	fsys, root, err := backend.Open(ctx, spec, filepath.Join(v.GetString("data"), "spool"))
	if err != nil {
		return nil, "", err
	}
	size, err := sizeSetting(v, "file-cache-size")
	if err != nil || size <= 0 {
		return fsys, root, err
	}
	cached, err := backend.WithFileCache(fsys, filepath.Join(v.GetString("data"), "cache"), size)
	return cached, root, err
}

// masterStorage is the master's view of the storage: --storage (an object
// store), else --storage-root (a local path; empty: the master deletes
// and sweeps nothing).
func masterStorage(ctx context.Context, v *viper.Viper) (vfs.FS, string, error) {
	spec, root := v.GetString("storage"), v.GetString("storage-root")
	switch {
	case spec != "" && root != "":
		return nil, "", fmt.Errorf("give --storage (an object store) or --storage-root (a local path), not both")
	case spec != "":
		if !backend.IsURL(spec) {
			return nil, "", fmt.Errorf("--storage %q is not an object store URL (s3://BUCKET[/PREFIX]?endpoint=...); a local root goes in --storage-root", spec)
		}
		return backend.Open(ctx, spec, "")
	case root != "":
		return backend.Open(ctx, root, "")
	}
	return nil, "", nil
}
