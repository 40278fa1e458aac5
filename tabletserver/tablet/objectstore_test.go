package tablet

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/s3fs"
)

// startObjectStore starts SeaweedFS and returns an FS on it rooted at
// "/model".
func startObjectStore(t *testing.T) vfs.FS {
	t.Helper()
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg, err := s3fs.ParseURL("s3://tabula/model?endpoint="+srv.Endpoint(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Root, cfg.SpoolDir = "/model", t.TempDir()
	fsys, err := s3fs.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}
