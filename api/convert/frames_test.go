package convert

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// splitFrames cuts b into buffers at random points (some empty), as
// gRPC's transport hands a message over in its frames.
func splitFrames(r *rand.Rand, b []byte) mem.BufferSlice {
	var bufs mem.BufferSlice
	for len(b) > 0 {
		n := min(len(b), r.IntN(64))
		bufs = append(bufs, mem.SliceBuffer(bytes.Clone(b[:n])))
		b = b[n:]
	}
	return append(bufs, mem.SliceBuffer(nil))
}

// checkFrames checks that Codec.Unmarshal of b cut into frames gives what
// ScanResponse.Decode of b whole gives: the same error or none, the same
// rows or parts.
func checkFrames(t *testing.T, r *rand.Rand, b []byte) {
	t.Helper()
	whole := &ScanResponse{Whole: true}
	werr := whole.Decode(bytes.Clone(b))
	cut := &ScanResponse{Whole: true}
	cerr := Codec{}.Unmarshal(splitFrames(r, b), cut)
	if (werr == nil) != (cerr == nil) {
		t.Fatalf("%x: in frames %v, whole %v", b, cerr, werr)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(cut.Rows, whole.Rows) || !proto.Equal(cut.Parts, whole.Parts) {
		t.Fatalf("%x: in frames %#v %v, whole %#v %v", b, cut.Rows, cut.Parts, whole.Rows, whole.Parts)
	}
}

// TestCodecDecodesRowsAcrossFrames: a message of whole rows in several
// frames decodes, without joining the frames (the response's buffer stays
// smaller than the message), into the rows the joined message gives;
// messages with parts, unknown fields or damage give what they give
// whole.
func TestCodecDecodesRowsAcrossFrames(t *testing.T) {
	r := wireRand(t)
	for range 500 {
		keys, rows := randomRows(r)
		var b []byte
		for i := range keys {
			b = AppendRow(b, keys[i], rows[i])
		}
		switch r.IntN(6) {
		case 0: // an unknown field
			b = protowire.AppendTag(b, 9, protowire.VarintType)
			b = protowire.AppendVarint(b, 7)
		case 1: // a row in parts
			b, _ = proto.MarshalOptions{}.MarshalAppend(b, &tabulapb.ReadRowsResponse{Rows: []*tabulapb.Row{{Key: []byte("p"), Continued: true}}})
		case 2: // cut short
			b = b[:r.IntN(len(b)+1)]
		}
		checkFrames(t, r, b)
	}
	var b []byte
	for i := range 1000 {
		b = AppendRow(b, fmt.Appendf(nil, "k%04d", i), []cell.Cell{{Family: "cf", Qualifier: []byte("q"), Value: bytes.Repeat([]byte{'v'}, 100)}})
	}
	resp := &ScanResponse{Whole: true}
	if err := (Codec{}).Unmarshal(splitFrames(r, b), resp); err != nil || len(resp.Rows) != 1000 {
		t.Fatalf("%d rows, %v", len(resp.Rows), err)
	}
	if cap(resp.buf) >= len(b) {
		t.Fatalf("a message of %d bytes in frames was joined (a buffer of %d)", len(b), cap(resp.buf))
	}
}

func FuzzDecodeFrames(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		b := randomBatch(r)
		f.Add(b, uint64(1))
	}
	f.Add([]byte{0x0a, 0x02, 0x18, 0x01}, uint64(2))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		checkFrames(t, rand.New(rand.NewPCG(seed, 0)), b)
	})
}
