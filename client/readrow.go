package client

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A point read (ReadRow) is one unary ReadRow call to the tablet server:
// gRPC spends less CPU on a unary call than on a stream (no goroutine
// watching the stream's context, no end-of-stream round), and a point
// read is almost nothing but its RPC (docs/BENCHMARKS.md "Requests near
// the gRPC floor"). The read falls back to a ReadRows stream, which
// gives the same answer, when the unary call cannot give it: the row is
// larger than one ReadRows message (the server says too_large and sends
// nothing), or the server predates ReadRow (UNIMPLEMENTED; the client
// then reads from that address with streams for unaryRetryAfter).

// unaryRetryAfter is how long the client keeps reading with streams from
// a server address that answered ReadRow with UNIMPLEMENTED before it
// tries ReadRow there again (the server may have been upgraded).
const unaryRetryAfter = time.Minute

// errUseStream is what a ReadRow attempt returns when the row must be
// read with a ReadRows stream instead.
var errUseStream = errors.New("client: read the row with ReadRows")

// streamOnly remembers the tablet server addresses that answered ReadRow
// with UNIMPLEMENTED, and when. It is empty in a cluster of servers that
// all know ReadRow, and then costs a lookup in an empty map.
type streamOnly struct {
	m   sync.Map         // address → time.Time of the answer
	now func() time.Time // nil: time.Now; tests replace it
}

func (s *streamOnly) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// has reports whether reads from addr go by stream for now.
func (s *streamOnly) has(addr string) bool {
	v, ok := s.m.Load(addr)
	if !ok {
		return false
	}
	if s.clock().Sub(v.(time.Time)) < unaryRetryAfter {
		return true
	}
	s.m.CompareAndDelete(addr, v)
	return false
}

func (s *streamOnly) add(addr string) { s.m.Store(addr, s.clock()) }

// readRow reads key with unary ReadRow calls (retried, re-located and
// checked as every call of Client.do). ok is false when the row must be
// read with a stream instead (nothing has been returned to the caller
// then); a key that is not a valid row key goes that way too, so that
// the stream path gives the error it always gave.
func (t *Table) readRow(ctx context.Context, key []byte, opts []ReadOption) (row Row, ok bool, err error) {
	if cell.ValidateRow(key) != nil {
		return Row{}, false, nil
	}
	var s readSettings
	for _, o := range opts {
		o.apply(&s)
	}
	var filter *tabulapb.RowFilter
	if s.filter != nil {
		if _, err := rowfilter.Compile(s.filter); err != nil {
			return Row{}, true, status.Error(codes.InvalidArgument, err.Error())
		}
		filter = convert.FilterToProto(s.filter)
	}
	row = Row{Key: key}
	err = t.c.do(ctx, t.name, key, true, func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
		if t.c.streamOnly.has(tab.Address) {
			return errUseStream
		}
		resp, err := ts.ReadRow(ctx, &tabulapb.ReadRowRequest{Tablet: tab.Ref(), RowKey: key, Filter: filter})
		switch {
		case status.Code(err) == codes.Unimplemented:
			t.c.streamOnly.add(tab.Address)
			return errUseStream
		case err != nil:
			return err
		case resp.GetTooLarge():
			return errUseStream
		}
		p := resp.GetRow()
		if p == nil {
			return nil
		}
		if !bytes.Equal(p.GetKey(), key) {
			return status.Errorf(codes.Internal, "client: tablet server %s answered row %q for a read of row %q", tab.Address, p.GetKey(), key)
		}
		row.Cells = convert.CellsFromProtoRow(p)
		return nil
	})
	if errors.Is(err, errUseStream) {
		return Row{}, false, nil
	}
	if err != nil {
		return Row{}, true, err
	}
	return row, true, nil
}
