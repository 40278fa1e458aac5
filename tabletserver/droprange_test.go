package tabletserver

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// TestDropRangeOverGRPC drops a row range of a loaded tablet through the
// RPC (over an SSTable and the memtable), checks the tablet ref's epoch
// like a data call, rejects a reversed range, and keeps later writes.
func TestDropRangeOverGRPC(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	for _, row := range []string{"a1", "b1", "b2", "c1"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "b3", set("cf", "q", 1, "b3")); err != nil {
		t.Fatal(err)
	}

	stale := &tabulapb.TabletRef{Table: ref.Table, TabletId: ref.TabletId, Epoch: ref.Epoch - 1}
	_, err := c.DropRange(e.ctx, &tabulapb.DropRangeRequest{Tablet: stale, StartKey: []byte("b"), EndKey: []byte("c")})
	wantNotServing(t, "drop at a stale epoch", err, ref.Table, ref.TabletId)
	_, err = c.DropRange(e.ctx, &tabulapb.DropRangeRequest{Tablet: ref, StartKey: []byte("c"), EndKey: []byte("b")})
	testkit.WantCode(t, "drop of a reversed range", err, codes.InvalidArgument, "")
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"a1", "b1", "b2", "b3", "c1"}) {
		t.Fatalf("after refused drops read %q, %v; want every row", rowKeys(rows), err)
	}

	if _, err := c.DropRange(e.ctx, &tabulapb.DropRangeRequest{Tablet: ref, StartKey: []byte("b"), EndKey: []byte("c")}); err != nil {
		t.Fatal(err)
	}
	if err := put(e.ctx, c, ref, "b9", set("cf", "q", 1, "after")); err != nil {
		t.Fatal(err)
	}
	rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"a1", "b9", "c1"}) {
		t.Fatalf("after dropping [b, c) read %q, %v; want a1, b9, c1", rowKeys(rows), err)
	}

	// To the end of the tablet: an empty end key.
	if _, err := c.DropRange(e.ctx, &tabulapb.DropRangeRequest{Tablet: ref, StartKey: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"a1"}) {
		t.Fatalf("after dropping [b, end) read %q, %v; want a1", rowKeys(rows), err)
	}
}
