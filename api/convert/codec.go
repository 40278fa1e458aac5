package convert

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the proto codec Codec hands everything else to
	"google.golang.org/grpc/mem"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/internal/unzeroed"
)

// Codec is gRPC's proto codec plus two message types of the scan path
// (see wire.go): a RowBatch's message (or any EncodedMessage) is sent as
// the bytes it already holds, and a ScanResponse is decoded straight into
// rows. Every other
// message goes to the proto codec, so a server or call that uses Codec
// behaves as with the default one for everything else. Its name is the
// proto codec's: the bytes on the wire are the same.
type Codec struct{}

var protoCodec = encoding.GetCodecV2("proto")

// Name is the proto codec's name (the content-subtype is unchanged).
func (Codec) Name() string { return protoCodec.Name() }

// Marshal hands over a RowBatch message's buffer (gRPC returns it to the
// pool once written) and marshals anything else with the proto codec.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	if m, ok := v.(*RowsMessage); ok {
		buf := m.buf
		m.buf = nil
		if buf == nil {
			return nil, fmt.Errorf("convert: a RowsMessage sent twice")
		}
		return mem.BufferSlice{mem.NewBuffer(buf, batchPool{})}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal decodes into a ScanResponse as ScanResponse.decode says, into
// an IngestRequest as its doc says, and anything else with the proto
// codec.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if ir, ok := v.(*IngestRequest); ok {
		return ir.decode(data)
	}
	r, ok := v.(*ScanResponse)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	if len(data) == 1 && !r.Borrow {
		return r.decode(data[0].ReadOnlyData())
	}
	// A message arrives in the transport's frames (16 KiB each): rows
	// copied out are decoded where they lie (frames.go); otherwise the
	// frames are joined in the response's own buffer. Without Borrow
	// nothing refers to it once decoded (proto.Unmarshal copies bytes);
	// with Borrow the rows point into it, so a message of one frame is
	// copied too (gRPC reuses its frames' buffers).
	if r.Whole && !r.Borrow && r.decodeFrames(data) {
		return nil
	}
	if n := data.Len(); cap(r.buf) < n {
		r.buf = unzeroed.Bytes(n)
	} else {
		r.buf = r.buf[:n]
	}
	data.CopyTo(r.buf)
	return r.decode(r.buf)
}

// ScanResponse receives the ReadRowsResponse messages of a scan, one at
// a time. Set Whole before receiving into it when rows may be taken as
// they are: the message is then decoded into Rows (DecodeRows), unless it
// holds a part of a larger row; otherwise, and for such a message, into
// Parts (a ReadRowsResponse, for a RowJoiner). Exactly one of Rows and
// Parts is set after a receive. The next receive into the same
// ScanResponse reuses the Rows slice itself (copy out the WireRows to
// keep); the rows' keys and cells are never reused, but they share
// chunks of memory (rowArena).
//
// Set Borrow as well for rows that are done with before the next receive
// (client.ReuseRows): whole rows then point into the received message
// itself, and their cells into a slice the next receive reuses, as the
// engine's rows with tablet.ReadOptions.ReuseCells: nothing is copied or
// allocated per row.
type ScanResponse struct {
	Whole  bool
	Borrow bool
	Rows   []WireRow
	Parts  *tabulapb.ReadRowsResponse
	// buf joins a message's frames; reused by the next receive into the
	// same ScanResponse.
	buf    []byte
	dec    rowDecoder
	frames [][]byte // scratch: the frames of a message being decoded
}

// Decode decodes the ReadRowsResponse encoding b as Codec.Unmarshal
// does; nothing refers to b afterwards, unless Borrow is set: the rows
// then point into b. For a transport that is not gRPC's (a tablet server
// called in process, which hands the message's bytes over).
func (r *ScanResponse) Decode(b []byte) error { return r.decode(b) }

func (r *ScanResponse) decode(b []byte) error {
	rows := r.Rows[:0]
	clear(r.Rows[:cap(r.Rows)]) // the last message's rows are the caller's alone
	r.Rows, r.Parts = nil, nil
	if r.Whole {
		r.dec.borrow = r.Borrow
		rows, whole, err := r.dec.decode(rows, b)
		if err != nil {
			return err
		}
		if whole {
			r.Rows = rows
			return nil
		}
	}
	r.Parts = &tabulapb.ReadRowsResponse{}
	return protoCodec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, r.Parts)
}

// decodeFrames decodes a message of whole rows that lies in several
// buffers without joining them (rowDecoder.decodeFrames), reporting
// false, and nothing decoded, for a message it leaves to decode.
func (r *ScanResponse) decodeFrames(data mem.BufferSlice) bool {
	bufs := r.frames[:0]
	for _, b := range data {
		bufs = append(bufs, b.ReadOnlyData())
	}
	rows := r.Rows[:0]
	clear(r.Rows[:cap(r.Rows)])
	r.Rows, r.Parts = nil, nil
	r.dec.borrow = false
	var ok bool
	rows, r.buf, ok = r.dec.decodeFrames(rows, bufs, r.buf)
	clear(bufs) // gRPC reuses the frames
	r.frames = bufs[:0]
	if !ok {
		clear(rows)
		r.Rows = rows[:0]
		return false
	}
	r.Rows = rows
	return true
}

// RowsMessage is a ReadRowsResponse already encoded, from RowBatch.Take
// (or EncodedMessage). Only Codec can send it, once, or a transport that
// is not gRPC's takes its bytes (Encoded).
type RowsMessage struct{ buf *[]byte }

// MessageBuffer returns an empty buffer of the pool Codec gives a sent
// RowsMessage's buffer back to, for a message encoded outside RowBatch:
// the gateway writes Bigtable's ReadRowsResponse itself (docs/GATEWAY.md
// "One hop or two"). Its bytes are not cleared: append the whole message,
// then send EncodedMessage of it.
func MessageBuffer() *[]byte { return batchPool{}.Get(rowBatchCap) }

// EncodedMessage returns the message whose encoding is *buf (from
// MessageBuffer): Codec sends those bytes as they are, whatever message
// they encode, and gives buf to the pool once gRPC has written them.
func EncodedMessage(buf *[]byte) *RowsMessage { return &RowsMessage{buf: buf} }

// Encoded hands over the message's bytes (they are the caller's now, not
// returned to the pool), or nil if they were sent or taken before.
func (m *RowsMessage) Encoded() []byte {
	if m.buf == nil {
		return nil
	}
	b := *m.buf
	m.buf = nil
	return b
}

// RowBatch builds a ReadRowsResponse from rows' cells (AppendRow) in a
// buffer from batchPool, this package's own pool (it does not clear what
// it hands out: AppendRow writes every byte it sends); the message hands
// the buffer to gRPC when sent.
type RowBatch struct {
	buf  *[]byte
	rows int
}

// rowBatchCap is the capacity a batch's buffer starts with: a scan's
// batch (1 MiB) and its last row fit without growing it.
const rowBatchCap = 1<<20 + 64<<10

// batchPool keeps the buffers of sent batches for the next ones. gRPC's
// own pools clear a buffer when they hand it out, which costs as much as
// writing the batch; a batch is appended from empty, so nothing of an
// old one is ever read.
type batchPool struct{}

var batchBuffers sync.Pool

// Get returns an empty buffer of at least rowBatchCap bytes. A new one
// is not cleared either (unzeroed): under a scan's allocation rate the
// collector empties the pool often, and clearing each new megabyte cost
// the gateway's scans about as much as writing it.
func (batchPool) Get(int) *[]byte {
	if b, ok := batchBuffers.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := unzeroed.Bytes(rowBatchCap)[:0]
	return &b
}

// Put keeps b for a later batch (gRPC calls it once b is written).
func (batchPool) Put(b *[]byte) {
	if cap(*b) >= rowBatchCap && cap(*b) <= 4*rowBatchCap {
		batchBuffers.Put(b)
	}
}

// Add appends a row.
func (b *RowBatch) Add(row []byte, cells []cell.Cell) {
	if b.buf == nil {
		b.buf = batchPool{}.Get(rowBatchCap)
	}
	*b.buf = AppendRow(*b.buf, row, cells)
	b.rows++
}

// Len returns the bytes and the rows added since the last Take.
func (b *RowBatch) Len() (bytes, rows int) {
	if b.buf == nil {
		return 0, 0
	}
	return len(*b.buf), b.rows
}

// Take returns the message of the rows added and starts a new batch.
func (b *RowBatch) Take() *RowsMessage {
	if b.buf == nil {
		b.buf = new([]byte) // an empty message
	}
	m := &RowsMessage{buf: b.buf}
	b.buf, b.rows = nil, 0
	return m
}

// Free gives an untaken batch's buffer back to the pool.
func (b *RowBatch) Free() {
	if b.buf != nil {
		batchPool{}.Put(b.buf)
		b.buf, b.rows = nil, 0
	}
}
