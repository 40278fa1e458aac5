package s3fs

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/vfs/vfstest"
)

// startStore starts SeaweedFS with bucket "tabula", stopped by t.Cleanup.
// Without a weed binary the test fails when TABULA_REQUIRE_WEED is set
// (make test sets it after building weed) and is skipped otherwise.
func startStore(t *testing.T) *seaweed.Server {
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
	return srv
}

func config(t *testing.T, srv *seaweed.Server, prefix string) Config {
	c, err := ParseURL("s3://tabula/"+prefix+"?endpoint="+srv.Endpoint(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	c.Root = "/storage"
	c.SpoolDir = t.TempDir()
	c.Timeout = 20 * time.Second
	return c
}

// TestConformance runs the same checks as the local disk's.
func TestConformance(t *testing.T) {
	srv := startStore(t)
	fsys, err := Open(context.Background(), config(t, srv, "conf"))
	if err != nil {
		t.Fatal(err)
	}
	vfstest.Run(t, fsys, "/storage")
}

// TestPartsPerSync: a file is one object per Sync (what the commit log's
// group commit relies on), and prefixes keep clusters apart.
func TestPartsPerSync(t *testing.T) {
	srv := startStore(t)
	a, err := Open(context.Background(), config(t, srv, "a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), config(t, srv, "b"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Create("/storage/x.log")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		w.Write([]byte{byte(i)})
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	ctx := context.Background()
	ps, err := a.parts(ctx, "a/x.log")
	if err != nil || len(ps) != 3 {
		t.Fatalf("parts = %d, %v; want 3 (one per Sync)", len(ps), err)
	}
	if _, err := b.Stat("/storage/x.log"); err == nil {
		t.Fatal("prefix b sees prefix a's file")
	}
	if _, err := a.Create("/elsewhere/x"); err == nil || !strings.Contains(err.Error(), "outside the storage root") {
		t.Fatalf("a name outside the root: %v", err)
	}
	if err := a.RemoveAll("/storage"); err == nil {
		t.Fatal("RemoveAll of the root succeeded")
	}
}

// TestOpenFailsClearly: a missing bucket and an unreachable endpoint are
// errors at Open that say so, within the timeout.
func TestOpenFailsClearly(t *testing.T) {
	srv := startStore(t)
	c := config(t, srv, "p")
	c.Bucket = "no-such-bucket"
	if _, err := Open(context.Background(), c); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	c = config(t, srv, "p")
	c.Endpoint = "127.0.0.1:1"
	c.Timeout = 3 * time.Second
	if _, err := Open(context.Background(), c); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("unreachable endpoint: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk"}
	c, err := ParseURL("s3://bkt/some/prefix/?endpoint=http://127.0.0.1:8333&region=eu-1", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Bucket != "bkt" || c.Prefix != "some/prefix" || c.Endpoint != "127.0.0.1:8333" || c.Secure || c.Region != "eu-1" || c.AccessKey != "ak" || c.SecretKey != "sk" {
		t.Fatalf("ParseURL = %+v", c)
	}
	for _, bad := range []string{"", "s3://", "http://bkt/x", "s3://bkt?endpoint=ftp://h", "s3://bkt?endpoint=http://h:1/path", "s3://bkt?colour=red", "/data/dir"} {
		if _, err := ParseURL(bad, func(string) string { return "" }); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
	if _, err := ParseURL("s3://bkt", func(k string) string { return map[string]string{"AWS_ACCESS_KEY_ID": "x"}[k] }); err == nil {
		t.Error("a key without a secret was accepted")
	}
}
