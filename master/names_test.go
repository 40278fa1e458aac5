package master

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// `tabula table delete ..` once removed <root>/tables/.., the whole
// storage root. Names that are not one plain path element are refused by
// every admin call, and nothing on disk is touched.
func TestPathLikeTableNamesAreRefusedAndDeleteNothing(t *testing.T) {
	c := newCluster(t)
	root := t.TempDir()
	keep := filepath.Join(root, "tables", "keep", "t1", "MANIFEST")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := c.startMaster(Options{StorageRoot: root})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	for _, name := range []string{".", "..", ".x", "-x", "a/b", "../keep"} {
		_, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema(name, "cf")})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("CreateTable(%q): %v, want INVALID_ARGUMENT", name, err)
		}
		_, err = mc.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: name})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("DeleteTable(%q): %v, want INVALID_ARGUMENT", name, err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("a refused call removed data: %v", err)
	}
}
