package backend

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/tabuladb/tabula/internal/seaweed"
	"github.com/tabuladb/tabula/internal/seaweed/seaweedtest"
	"github.com/tabuladb/tabula/vfs"
)

// TestRequestsSeeThroughTheFileCache: the requests of an object store
// are read through the file cache over it (what a tablet server's FS is),
// and count what was sent: a cached SSTable read twice is downloaded
// once. The local disk has none.
func TestRequestsSeeThroughTheFileCache(t *testing.T) {
	if _, ok := Requests(vfs.Default); ok {
		t.Fatal("the local disk reports object-store requests")
	}
	srv := seaweedtest.Start(t, seaweed.Config{Bucket: "tabula"})
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	fsys, root, err := Open(context.Background(), "s3://tabula/req?endpoint="+srv.Endpoint(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cached, err := WithFileCache(fsys, t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	before, ok := Requests(cached)
	if !ok {
		t.Fatal("no requests reported through the file cache")
	}
	name := filepath.Join(root, "t", "1.sst")
	w, err := cached.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := vfs.ReadFile(cached, name); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := Requests(cached)
	d := after.Sub(before)
	// Create lists the name (to refuse an existing file); the part's PUT;
	// the first read lists the parts and downloads the file in one GET;
	// the second is local.
	if d.Put != 1 || d.Get != 1 || d.List != 2 || d.Copy != 0 || d.Delete != 0 {
		t.Fatalf("a write and two reads through the cache counted %+v", d)
	}
}
