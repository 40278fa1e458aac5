package convert

import (
	"errors"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/unzeroed"
)

// A bulk load's rows go to the tablet servers in IngestRowsRequest
// messages (api/tabulapb/bulkload.proto). The client writes them with
// AppendIngestTablet and AppendIngestRow and sends them as an
// EncodedMessage; the server receives them into an IngestRequest. Both
// skip the Row and Cell messages proto would make and copy out field by
// field: the load's CPU on either side went half to them
// (docs/BENCHMARKS.md "Export and import"). The bytes on the wire are the
// same, so either side may use proto instead.

// AppendIngestTablet appends the IngestRowsRequest.tablet field: the
// start of every message of a call.
func AppendIngestTablet(b []byte, ref *tabulapb.TabletRef) ([]byte, error) {
	m, err := proto.Marshal(ref)
	if err != nil {
		return nil, err
	}
	b = protowire.AppendTag(b, ingestTablet, protowire.BytesType)
	return protowire.AppendBytes(b, m), nil
}

// IngestRequest is an IngestRowsRequest received through Codec: its
// tablet, and its rows decoded into cells whose bytes are copied into
// chunks of memory of their own (rowArena), so they stay valid after the
// next receive. Receive each message into a new IngestRequest.
type IngestRequest struct {
	Tablet *tabulapb.TabletRef
	Rows   []WireRow
	dec    rowDecoder
}

// GetTablet returns the message's tablet (nil if none), as the generated
// IngestRowsRequest's does: the authorization rules read it.
func (r *IngestRequest) GetTablet() *tabulapb.TabletRef {
	if r == nil {
		return nil
	}
	return r.Tablet
}

// errIngestWire is what an IngestRequest's receive returns for bytes
// that are no IngestRowsRequest.
var errIngestWire = errors.New("convert: malformed IngestRowsRequest")

// errIngestPart refuses a row sent in parts: a bulk load's rows are
// whole (a Row's continued flag and a cell's value_continues are for
// scans).
var errIngestPart = errors.New("convert: an IngestRowsRequest row is marked as a part of a larger row; a bulk load sends whole rows")

// decode reads the message from data.
func (r *IngestRequest) decode(data mem.BufferSlice) error {
	// Rows are copied out: b is not kept. A message in several frames
	// is joined in a buffer of the pool RowBatch uses.
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		buf := batchPool{}.Get(rowBatchCap)
		defer batchPool{}.Put(buf)
		if n := data.Len(); cap(*buf) < n {
			*buf = unzeroed.Bytes(n)
		} else {
			*buf = (*buf)[:n]
		}
		data.CopyTo(*buf)
		b = *buf
	}
	r.Tablet, r.Rows = nil, r.Rows[:0]
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return errIngestWire
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != ingestTablet && num != ingestRows) {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errIngestWire
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errIngestWire
		}
		b = b[n:]
		if num == ingestTablet {
			// proto merges a repeated message field; so does this.
			if r.Tablet == nil {
				r.Tablet = &tabulapb.TabletRef{}
			}
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(v, r.Tablet); err != nil {
				return err
			}
			continue
		}
		row, whole, err := r.dec.decodeRow(v)
		if err != nil {
			return err
		}
		if !whole {
			return errIngestPart
		}
		r.Rows = append(r.Rows, row)
	}
	return nil
}
