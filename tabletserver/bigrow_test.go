package tabletserver

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
)

// Any row that can be written can be read: a row larger than a message
// is sent in parts. Here two 3 MiB cells make a row larger than the 4 MiB
// a gRPC client receives by default (the same as two 60 MiB cells against
// the server's 96 MiB limit, without moving 120 MiB in a test); the row
// reads back whole by point read and by scan, and the scan goes on past
// it. Before, such a row failed every read and scan through it.
func TestRowLargerThanAMessageIsReadInParts(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv) // default client limits: 4 MiB per received message
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	const size = 3 << 20
	vals := [][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size)}
	for i, v := range vals {
		if err := put(e.ctx, c, ref, "big", set("cf", string(rune('p'+i)), 1, string(v))); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(e.ctx, c, ref, "small", set("cf", "q", 1, "s")); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*tabulapb.ReadRowsRequest{
		{Tablet: ref, Rows: &tabulapb.RowSet{RowKeys: [][]byte{[]byte("big")}}},
		{Tablet: ref},
	} {
		stream, err := c.ReadRows(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var j convert.RowJoiner
		var rows []*tabulapb.Row
		messages := 0
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading the big row: %v", err)
			}
			messages++
			for _, p := range resp.Rows {
				r, err := j.Add(p)
				if err != nil {
					t.Fatal(err)
				}
				if r != nil {
					rows = append(rows, r)
				}
			}
		}
		if len(rows) == 0 || string(rows[0].Key) != "big" || len(rows[0].Cells) != 2 {
			t.Fatalf("read %d rows", len(rows))
		}
		for i, c := range rows[0].Cells {
			if !bytes.Equal(c.Value, vals[i]) {
				t.Fatalf("cell %d: %d bytes back, want %d", i, len(c.Value), len(vals[i]))
			}
		}
		if req.Rows == nil && (len(rows) != 2 || string(rows[1].Key) != "small") {
			t.Fatalf("the scan did not go on past the big row: %d rows", len(rows))
		}
		t.Logf("%d messages", messages)
	}
}
