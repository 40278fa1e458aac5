package tabletserver

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// A bulk load call whose client stops sending is ended after
// IngestIdleTimeout with UNAVAILABLE, loads nothing, and lets the tablet's
// compactions run again (they wait while a load streams).
func TestStalledBulkLoadEndsAndLoadsNothing(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.IngestIdleTimeout = 200 * time.Millisecond })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := tabulapb.NewBulkLoadClient(conn).IngestRows(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	row := &tabulapb.Row{Key: []byte("r1"), Cells: []*tabulapb.Cell{{Family: "cf", Qualifier: []byte("q"), TimestampMicros: 1, Value: []byte("v")}}}
	if err := stream.Send(&tabulapb.IngestRowsRequest{Tablet: ref, Rows: []*tabulapb.Row{row}}); err != nil {
		t.Fatal(err)
	}
	// The client keeps its side open and sends nothing more.
	var resp tabulapb.IngestRowsResponse
	err = stream.RecvMsg(&resp)
	testkit.WantCode(t, "the stalled bulk load", err, codes.Unavailable, "")
	if !strings.Contains(err.Error(), "sent nothing") {
		t.Errorf("the stalled load's error does not say why: %v", err)
	}
	if got, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref}); err != nil || len(got) != 0 {
		t.Fatalf("after the stalled load: %d rows, %v; want none", len(got), err)
	}
	// Compactions are not held off any more.
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true}); err != nil {
		t.Fatalf("a major compaction after the stalled load: %v", err)
	}
}
