package tabletserver

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
)

// A scan through the client takes rows encoded straight from cells
// (convert.RowBatch, decoded by convert.DecodeRows) and rows sent in parts
// (joined by the client) in one stream: small rows before and after a row
// larger than a message, and a cell whose value spans parts, all come
// back whole and in order, over gRPC and over the in-process connection
// (Server.LocalConn, which hands the encoded rows over); with
// client.ReuseRows too, whose rows point into the messages received (each
// valid until the next Next: its Clone is kept). Every row kept is still
// as it came at the end of the scan.
func TestClientScanTakesEncodedRowsAndRowsInParts(t *testing.T) {
	for _, local := range []bool{false, true} {
		for _, reuse := range []bool{false, true} {
			t.Run(fmt.Sprintf("local=%v/reuse=%v", local, reuse), func(t *testing.T) { clientScanTakesEncodedRowsAndRowsInParts(t, local, reuse) })
		}
	}
}

func clientScanTakesEncodedRowsAndRowsInParts(t *testing.T, local, reuse bool) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	rec := e.assign("t1", nil, nil, srv, 1)
	ref := e.load(c, rec)
	big := [][]byte{bytes.Repeat([]byte("a"), 600<<10), bytes.Repeat([]byte("b"), 1<<20+77)}
	want := map[string][][]byte{}
	for i := range 300 {
		row := fmt.Sprintf("r%03d", i)
		v := fmt.Appendf(nil, "v%d", i)
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, string(v))); err != nil {
			t.Fatal(err)
		}
		want[row] = [][]byte{v}
		if i == 150 {
			for j, v := range big {
				if err := put(e.ctx, c, ref, row, set("cf", fmt.Sprint("z", j), 1, string(v))); err != nil {
					t.Fatal(err)
				}
			}
			want[row] = append(want[row], big...)
		}
	}
	m := fakemaster.Start(t)
	m.SetTablets(e.schema.Name, &tabulapb.TabletInfo{TabletId: rec.ID, ServerId: srv.ID(), ServerAddress: srv.Addr(), Epoch: 1, State: "assigned"})
	opts := client.Options{Masters: []string{m.Addr()}}
	if local {
		opts.Local = []client.LocalServer{srv}
	}
	before := srv.InProcessCalls()
	cl, err := client.NewClientWithOptions(e.ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	var read []client.ReadOption
	if reuse {
		read = append(read, client.ReuseRows())
	}
	it := cl.Open(e.schema.Name).ReadRows(e.ctx, client.InfiniteRange(nil), read...)
	defer it.Close()
	check := func(n int, row client.Row) {
		t.Helper()
		if wantKey := fmt.Sprintf("r%03d", n); string(row.Key) != wantKey {
			t.Fatalf("row %d is %q, want %q", n, row.Key, wantKey)
		}
		w := want[string(row.Key)]
		if len(row.Cells) != len(w) {
			t.Fatalf("row %q: %d cells, want %d", row.Key, len(row.Cells), len(w))
		}
		for i, c := range row.Cells {
			if !bytes.Equal(c.Value, w[i]) || !bytes.Equal(c.Row, row.Key) || c.Family != "cf" || c.Timestamp != 1 {
				t.Fatalf("row %q cell %d: %q/%d/%d bytes of value, want %d", row.Key, i, c.Family, c.Timestamp, len(c.Value), len(w[i]))
			}
		}
	}
	var kept []client.Row
	for it.Next() {
		row := it.Row()
		check(len(kept), row)
		if reuse {
			row = row.Clone()
		}
		kept = append(kept, row)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if len(kept) != 300 {
		t.Fatalf("scanned %d rows, want 300", len(kept))
	}
	for n, row := range kept {
		check(n, row)
	}
	if calls := srv.InProcessCalls() - before; (calls > 0) != local {
		t.Fatalf("%d calls in process, local %v", calls, local)
	}
}
