package convert

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// randomIngest returns an IngestRowsRequest of randomRows, as proto
// builds it, and the same message as AppendIngestTablet and
// AppendIngestRow write it.
func randomIngest(t testing.TB, r *rand.Rand) (*tabulapb.IngestRowsRequest, []byte) {
	ref := &tabulapb.TabletRef{Table: "t", TabletId: "tab-1", Epoch: r.Int64N(9)}
	keys, rows := randomRows(r)
	want := &tabulapb.IngestRowsRequest{Tablet: ref}
	b, err := AppendIngestTablet(nil, ref)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		want.Rows = append(want.Rows, CellsToProtoRow(keys[i], rows[i]))
		b = AppendIngestRow(b, keys[i], rows[i])
	}
	return want, b
}

// TestIngestEncodingIsTheProtoEncoding: a message written by
// AppendIngestTablet and AppendIngestRow unmarshals (proto.Unmarshal)
// into the message proto builds, and an IngestRequest receives from it
// the cells CellsFromProtoRow gives, whether it comes in one buffer or in
// frames.
func TestIngestEncodingIsTheProtoEncoding(t *testing.T) {
	r := wireRand(t)
	for range 500 {
		want, b := randomIngest(t, r)
		got := &tabulapb.IngestRowsRequest{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("the appended message unmarshals to\n%v\nwant\n%v", got, want)
		}
		checkIngest(t, b, r)
	}
}

// checkIngest receives b into an IngestRequest through Codec, in one
// buffer and then cut into frames, and checks it against proto.Unmarshal:
// an error only where proto fails or a row is a part, and then the
// tablet and the cells proto and CellsFromProtoRow give, none of them
// pointing into b.
func checkIngest(t *testing.T, b []byte, r *rand.Rand) {
	t.Helper()
	want := &tabulapb.IngestRowsRequest{}
	perr := proto.Unmarshal(b, want)
	for _, frames := range []mem.BufferSlice{{mem.SliceBuffer(b)}, cutFrames(b, r)} {
		var got IngestRequest
		err := Codec{}.Unmarshal(frames, &got)
		switch {
		case err != nil && perr == nil:
			if errors.Is(err, errIngestPart) && hasPart(want) {
				continue
			}
			t.Fatalf("receiving %x: %v; proto.Unmarshal accepts it", b, err)
		case err != nil:
			continue
		case perr != nil:
			t.Fatalf("received %x; proto.Unmarshal: %v", b, perr)
		case hasPart(want):
			t.Fatalf("received %x, whose row is a part, as whole", b)
		}
		if !proto.Equal(got.Tablet, want.Tablet) {
			t.Fatalf("received %x: tablet %v, proto %v", b, got.Tablet, want.Tablet)
		}
		if len(got.Rows) != len(want.Rows) {
			t.Fatalf("received %x: %d rows, proto %d", b, len(got.Rows), len(want.Rows))
		}
		c := bytes.Clone(b)
		for i := range b { // nothing received points into the message
			b[i] ^= 0xff
		}
		for i, p := range want.Rows {
			wantCells := CellsFromProtoRow(p)
			if len(wantCells) == 0 {
				wantCells = []cell.Cell{}
			}
			if !reflect.DeepEqual(got.Rows[i].Key, p.GetKey()) || !reflect.DeepEqual(got.Rows[i].Cells, wantCells) {
				t.Fatalf("received %x: row %d = %q %#v, proto %q %#v", c, i, got.Rows[i].Key, got.Rows[i].Cells, p.GetKey(), wantCells)
			}
		}
		copy(b, c)
	}
}

// cutFrames cuts b into a few buffers, as the transport's frames bring a
// message.
func cutFrames(b []byte, r *rand.Rand) mem.BufferSlice {
	var s mem.BufferSlice
	for len(b) > 0 {
		n := 1 + r.IntN(len(b))
		s = append(s, mem.SliceBuffer(b[:n]))
		b = b[n:]
	}
	return s
}

func hasPart(m *tabulapb.IngestRowsRequest) bool {
	for _, p := range m.Rows {
		if p.GetContinued() || hasContinuingCell(p) {
			return true
		}
	}
	return false
}

func FuzzIngestRequest(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		_, b := randomIngest(f, r)
		f.Add(b)
	}
	f.Add([]byte{0x12, 0x02, 0x18, 0x01})             // a continued row
	f.Add([]byte{0x12, 0x04, 0x12, 0x02, 0x0a, 0xff}) // a family of invalid UTF-8
	f.Add([]byte{0x0a, 0x02, 0x0a, 0xff})             // a tablet of invalid UTF-8
	f.Add(protowire.AppendTag(nil, 2, protowire.VarintType))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkIngest(t, bytes.Clone(b), rand.New(rand.NewPCG(uint64(len(b)), 5)))
	})
}
