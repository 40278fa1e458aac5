// Package seaweedtest starts SeaweedFS for tests. Without a weed binary a
// test fails when TABULA_REQUIRE_WEED is set (make test sets it, after
// `make tools` built the binary) and is skipped otherwise, so a plain
// `go test` on a machine without weed still runs everything else.
package seaweedtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
)

// Need fails or skips t when there is no weed binary.
func Need(t testing.TB) {
	t.Helper()
	if _, err := seaweed.Binary(); err != nil {
		if os.Getenv("TABULA_REQUIRE_WEED") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// Start starts SeaweedFS with cfg (Dir defaults to a temporary folder),
// stopped by t.Cleanup.
func Start(t testing.TB, cfg seaweed.Config) *seaweed.Server {
	t.Helper()
	Need(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := seaweed.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}
