package tabletserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// Scans whose readers stop reading pin memory (rows waiting to be sent,
// the iterator's blocks): the server runs at most MaxScans at once and
// refuses more with RESOURCE_EXHAUSTED, which clients retry with backoff.
// Before, 1000 unread scans grew a server from 0.7 to 3.2 GB.
func TestScansBeyondTheLimitAreRefusedNotQueued(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.MaxScans = 2 })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	// More than a stream's flow-control window (8 MiB), so that a scan
	// nobody reads blocks in Send instead of finishing into buffers.
	const rows = 40
	big := strings.Repeat("v", 512<<10)
	for i := range rows {
		if err := put(e.ctx, c, ref, fmt.Sprintf("r%02d", i), set("cf", "q", 1, big)); err != nil {
			t.Fatal(err)
		}
	}
	// Two scans that are never read: each holds its token until closed.
	ctx, cancel := context.WithCancel(e.ctx)
	for range 2 {
		stream, err := c.ReadRows(ctx, &tabulapb.ReadRowsRequest{Tablet: ref})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Header(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10e9, "two running scans", func() bool { return len(srv.scans) == 2 })
	_, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	testkit.WantCode(t, "a third scan", err, codes.ResourceExhausted, "")
	cancel()
	eventually(t, 10e9, "the stalled scans to end", func() bool { return len(srv.scans) == 0 })
	if got, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref}); err != nil || len(got) != rows {
		t.Fatalf("a scan after the others ended: %d rows, %v", len(got), err)
	}
}

// A client that stops reading cannot hold a scan slot forever: once a
// send has been blocked for ScanStallTimeout the server ends the stream
// with UNAVAILABLE (clients resume after the last row they got) and frees
// the slot, even though the client keeps its end open.
func TestStalledScanIsEndedAndItsSlotFreed(t *testing.T) {
	e := newEnv(t)
	// The timeout also bounds the pauses of the scan read after it, which
	// a loaded machine can stretch past 200 ms: 1 s keeps that one whole.
	srv := e.start(func(o *Options) { o.MaxScans = 1; o.ScanStallTimeout = time.Second })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	const rows = 40 // 20 MiB: more than the stream's flow-control window
	big := strings.Repeat("v", 512<<10)
	for i := range rows {
		if err := put(e.ctx, c, ref, fmt.Sprintf("r%02d", i), set("cf", "q", 1, big)); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := c.ReadRows(e.ctx, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}
	// The stream stays open on the client side; the server must give up.
	eventually(t, 30e9, "the stalled scan's slot to be freed", func() bool { return len(srv.scans) == 0 })
	if got, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref}); err != nil || len(got) != rows {
		t.Fatalf("a scan after the stalled one: %d rows, %v", len(got), err)
	}
	n := 0
	for {
		resp, err := stream.Recv()
		if err != nil {
			testkit.WantCode(t, "the stalled stream", err, codes.Unavailable, "")
			if !strings.Contains(err.Error(), "read nothing") {
				t.Errorf("the stalled stream's error does not say why: %v", err)
			}
			break
		}
		n += len(resp.GetRows())
	}
	if n >= rows {
		t.Errorf("the stalled stream delivered all %d rows; it should have been cut short", n)
	}
}
