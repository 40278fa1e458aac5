package tabletserver

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// A tablet is created empty only once, by its first owner; after that a
// folder without files means the data is gone, and loading it fails
// loudly (DATA_LOSS) instead of serving an empty tablet. Before, a wiped
// storage root reopened every tablet empty and `count` answered 0.
func TestMissingTabletFolderIsNotRecreatedEmpty(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	rec := e.tablet("t1")
	if rec.Fresh {
		t.Fatalf("the first owner did not record that it created the tablet: %+v", rec.TabletRecord)
	}
	if err := put(e.ctx, c, ref, "r", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.root, "tables", "users", "t1")); err != nil {
		t.Fatal(err)
	}
	next := rec.TabletRecord
	next.Epoch++
	e.putRecord(next)
	_, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: next.ToProto(), Schema: e.schema})
	testkit.WantCode(t, "loading a tablet whose files are gone", err, codes.DataLoss, "")
	if _, err := os.Stat(filepath.Join(e.root, "tables", "users", "t1")); !os.IsNotExist(err) {
		t.Fatalf("the failed load created a folder: %v", err)
	}
}
