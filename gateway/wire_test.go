package gateway

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// sentBytes is a ReadRows stream that keeps the bytes of the messages a
// wireSink sends.
type sentBytes struct {
	grpc.ServerStream
	msgs [][]byte
}

func (s *sentBytes) SendMsg(m any) error {
	s.msgs = append(s.msgs, m.(*convert.RowsMessage).Encoded())
	return nil
}

// checkWireSink writes rows with chunkWriter through both sinks and
// requires the wireSink's bytes to decode to exactly the messageSink's
// messages, one for one, and to be what proto.Marshal writes for them.
// The rows the wireSink gets are overwritten right after each is written
// (as Tabula's client reuses them, client.ReuseRows): its messages must
// not change.
func checkWireSink(t *testing.T, rows []client.Row, max int, wholeRows bool) {
	t.Helper()
	var want []*btpb.ReadRowsResponse
	mw := chunkWriter{max: max, wholeRows: wholeRows, sink: &messageSink{sendMsg: func(m *btpb.ReadRowsResponse) error {
		want = append(want, m)
		return nil
	}}}
	var got sentBytes
	ww := chunkWriter{max: max, wholeRows: wholeRows, sink: &wireSink{stream: &got}}
	for _, row := range rows {
		if err := mw.row(row); err != nil {
			t.Fatal(err)
		}
		reused := row.Clone()
		if err := ww.row(reused); err != nil {
			t.Fatal(err)
		}
		scribble(reused)
	}
	if err := mw.flush(); err != nil {
		t.Fatal(err)
	}
	if err := ww.flush(); err != nil {
		t.Fatal(err)
	}
	if len(got.msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(got.msgs), len(want))
	}
	for i, b := range got.msgs {
		var m btpb.ReadRowsResponse
		if err := proto.Unmarshal(b, &m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !proto.Equal(&m, want[i]) {
			t.Fatalf("message %d decodes to\n%v\nwant\n%v", i, &m, want[i])
		}
		if wb, err := proto.Marshal(want[i]); err != nil || !bytes.Equal(b, wb) {
			t.Fatalf("message %d: %x, proto.Marshal writes %x (%v)", i, b, wb, err)
		}
	}
}

// scribble overwrites every byte and label of row in place.
func scribble(row client.Row) {
	for _, b := range [][]byte{row.Key} {
		for i := range b {
			b[i] = '#'
		}
	}
	for i := range row.Cells {
		c := &row.Cells[i]
		for _, b := range [][]byte{c.Qualifier, c.Value} {
			for j := range b {
				b[j] = '#'
			}
		}
		for j := range c.Labels {
			c.Labels[j] = "scribbled"
		}
	}
}

func testRow(key string, cells ...cell.Cell) client.Row {
	for i := range cells {
		cells[i].Row = []byte(key)
	}
	return client.Row{Key: []byte(key), Cells: cells}
}

// The wire sink writes what chunkWriter's messages are, for every rule:
// families named when they change and on a message's first chunk, empty
// qualifiers and values, labels, timestamps (0, negative), values split
// across chunks with value_size, a row's key again on a message's first
// chunk, whole rows per message or not.
func TestWireSinkEncodesTheMessages(t *testing.T) {
	big := strings.Repeat("v", 250)
	rows := []client.Row{
		testRow("a", cell.Cell{Family: "cf", Qualifier: []byte("q"), Timestamp: 1000, Value: []byte("x")}),
		testRow("b",
			cell.Cell{Family: "cf", Qualifier: nil, Timestamp: 0, Value: nil},
			cell.Cell{Family: "cf", Qualifier: []byte("q2"), Timestamp: -5, Value: []byte("y"), Labels: []string{"l1", ""}},
			cell.Cell{Family: "cg", Qualifier: []byte("q"), Timestamp: 1 << 60, Value: []byte(big)},
		),
		testRow("c", cell.Cell{Family: "", Qualifier: []byte{0, 0xff}, Timestamp: 7, Value: []byte(big + big)}),
		testRow("d", cell.Cell{Family: "cf", Qualifier: []byte("a"), Value: []byte(big)}, cell.Cell{Family: "cf", Qualifier: []byte("b"), Value: []byte(big)}),
		testRow("e", cell.Cell{Family: "cf", Qualifier: []byte("q"), Value: []byte("z")}),
	}
	for _, max := range []int{1, 64, 100, 300, 1 << 20} {
		for _, whole := range []bool{false, true} {
			t.Run(fmt.Sprintf("max=%d,wholeRows=%v", max, whole), func(t *testing.T) {
				checkWireSink(t, rows, max, whole)
			})
		}
	}
}

// FuzzWireSink checks random rows and settings as
// TestWireSinkEncodesTheMessages checks its table.
func FuzzWireSink(f *testing.F) {
	f.Add(uint64(1), uint16(100), false)
	f.Add(uint64(2), uint16(1), true)
	f.Add(uint64(3), uint16(5000), false)
	f.Fuzz(func(t *testing.T, seed uint64, max uint16, wholeRows bool) {
		r := rand.New(rand.NewPCG(seed, 0))
		rows := make([]client.Row, r.IntN(20))
		for i := range rows {
			// Families and labels as Tabula's are: valid UTF-8 (a proto
			// string must be), and labels as filters make them.
			cells := make([]cell.Cell, 1+r.IntN(6))
			fam := []string{"", "a", "cf", "família"}[r.IntN(4)]
			for j := range cells {
				if r.IntN(3) == 0 {
					fam = []string{"", "a", "cf", "família"}[r.IntN(4)]
				}
				c := cell.Cell{Family: fam, Qualifier: randBytes(r, 8), Timestamp: r.Int64() >> r.IntN(64), Value: randBytes(r, 300)}
				if r.IntN(2) == 0 {
					c.Timestamp = -c.Timestamp
				}
				for range r.IntN(3) {
					c.Labels = append(c.Labels, fmt.Sprintf("l%d", r.IntN(100)))
				}
				cells[j] = c
			}
			rows[i] = testRow(fmt.Sprintf("row%03d%s", i, randBytes(r, 40)), cells...)
		}
		checkWireSink(t, rows, 8+int(max)%2048, wholeRows)
	})
}

// randBytes returns up to n random bytes, nil or empty at times.
func randBytes(r *rand.Rand, n int) []byte {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, r.IntN(n+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
