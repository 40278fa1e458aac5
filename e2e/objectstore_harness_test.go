package e2e

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
)

// startObjectStore starts SeaweedFS with bucket "tabula" for the cluster;
// the cluster's teardown stops it after the processes.
func (c *cluster) startObjectStore(t *testing.T, ctx context.Context, identities string) {
	t.Helper()
	seaweedtest.Need(t)
	srv, err := seaweed.Start(ctx, seaweed.Config{Dir: filepath.Join(c.dir, "seaweed"), Bucket: "tabula", S3Config: identities})
	if err != nil {
		t.Fatalf("starting SeaweedFS: %v", err)
	}
	c.store = srv
	c.url = "s3://tabula/e2e?endpoint=" + srv.Endpoint()
}

// storageArgs are a master's storage flags.
func (c *cluster) storageArgs() []string {
	if c.url != "" {
		return []string{"--storage", c.url}
	}
	return []string{"--storage-root", c.storage}
}

// serverData is a tablet server's --data: the shared storage root, or,
// with an object store, the server's own folder.
func (c *cluster) serverData(id string) string {
	if c.url != "" {
		return filepath.Join(c.dir, "hosts", id)
	}
	return c.storage
}
