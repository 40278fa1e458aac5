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

// A damaged SSTable no longer fails its tablet's load: the load opens no
// SSTable (the manifest records what placing one needs, and files open on
// their first read), and the reads that need the damaged file fail with
// INTERNAL naming it, the code the load failed with before; a read the
// file cannot hold (another row, placed by the file's recorded keys)
// still answers.
func TestDamagedSSTableFailsTheReadsThatNeedItWithInternal(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	for _, row := range []string{"a1", "a2"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, "v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.UnloadTablet(e.ctx, &tabulapb.UnloadTabletRequest{Tablet: ref}); err != nil {
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(e.root, "tables", "users", "t1", "cf", "*.sst"))
	if err != nil || len(ssts) != 1 {
		t.Fatalf("the unload flushed %v (%v), want one SSTable", ssts, err)
	}
	b, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff // the footer's magic
	if err := os.WriteFile(ssts[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	next := e.tablet("t1").TabletRecord
	next.Epoch++
	e.putRecord(next)
	ref = e.load(c, next)
	_, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("a1")}}})
	testkit.WantCode(t, "reading a row of the damaged SSTable", err, codes.Internal, filepath.Base(ssts[0]))
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("z9")}}})
	if err != nil || len(rows) != 0 {
		t.Fatalf("reading a row outside the damaged file's keys = %v, %v; want no row and no error", rows, err)
	}
}
