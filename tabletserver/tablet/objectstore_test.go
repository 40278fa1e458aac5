package tablet

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/s3fs"
)

// startObjectStore starts SeaweedFS and returns an FS on it rooted at
// "/model"; without a weed binary the test fails under
// TABULA_REQUIRE_WEED (make test) and is skipped otherwise.
func startObjectStore(t *testing.T) vfs.FS {
	t.Helper()
	if _, err := seaweed.Binary(); err != nil {
		if os.Getenv("TABULA_REQUIRE_WEED") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := seaweed.Start(ctx, seaweed.Config{Dir: t.TempDir(), Bucket: "tabula"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
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
