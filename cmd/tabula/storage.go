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
// --storage (its uploads spooled under --data), else the local root --data.
func serverStorage(ctx context.Context, v *viper.Viper) (vfs.FS, string, error) {
	spec := v.GetString("storage")
	if spec == "" {
		spec = v.GetString("data")
	} else if !backend.IsURL(spec) {
		return nil, "", fmt.Errorf("--storage %q is not an object store URL (s3://BUCKET[/PREFIX]?endpoint=...); a local storage root goes in --data", spec)
	}
	return backend.Open(ctx, spec, filepath.Join(v.GetString("data"), "spool"))
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
