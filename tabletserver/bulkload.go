package tabletserver

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/tabletserver/load"
)

// bulkLoadServer serves the BulkLoad service (api/tabulapb/bulkload.proto)
// on the tablet server's port: one call streams one tablet's share of a
// bulk load into tablet.Ingest (docs/CONTRACTS.md §3 "Bulk load").
type bulkLoadServer struct {
	tabulapb.UnimplementedBulkLoadServer
	s *Server
}

// errTabletChanged fails a call whose later message names another tablet.
var errTabletChanged = errors.New("bulk load: a message names another tablet than the call's first; one call loads one tablet")

// IngestRows ingests the rows of every message of the call in one
// tablet.Ingest, which takes its cut when the first message has arrived
// and publishes when the client closes its side.
func (b bulkLoadServer) IngestRows(stream tabulapb.BulkLoad_IngestRowsServer) error {
	s, ctx := b.s, stream.Context()
	first, err := recvIngest(stream)
	if errors.Is(err, io.EOF) {
		return toStatus(ctx, cell.Invalidf("bulk load: the call sent no message; each names the tablet and carries rows"), "", "", nil)
	}
	if err != nil {
		return err
	}
	ref := first.Tablet
	h, err := s.resolve(ref, nil)
	if err != nil {
		return toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	start := time.Now()
	var sent int
	msgs := receiveIngest(ctx, stream)
	idle := time.NewTimer(s.opts.IngestIdleTimeout)
	defer idle.Stop()
	res, err := h.t.Ingest(ctx, func(yield func([]byte, []cell.Cell) error) error {
		for msg := first; ; {
			for _, r := range msg.Rows {
				sent += len(r.Key)
				for _, c := range r.Cells {
					sent += len(c.Family) + len(c.Qualifier) + len(c.Value)
				}
				if err := yield(r.Key, r.Cells); err != nil {
					return err
				}
			}
			idle.Reset(s.opts.IngestIdleTimeout)
			var m received
			select {
			case m = <-msgs:
			case <-idle.C:
				return status.Errorf(codes.Unavailable, "bulk load: the client sent nothing for %v; the tablet's compactions wait while a load streams, so the call ends and loads nothing (send the share again)", s.opts.IngestIdleTimeout)
			}
			if errors.Is(m.err, io.EOF) {
				return nil
			} else if m.err != nil {
				return m.err
			}
			msg = m.msg
			if !proto.Equal(msg.Tablet, ref) {
				return cell.Invalidf("%v (first %s/%s, then %s/%s)", errTabletChanged,
					ref.GetTable(), ref.GetTabletId(), msg.Tablet.GetTable(), msg.Tablet.GetTabletId())
			}
		}
	})
	record(h, load.Write, nil, sent, start)
	if err = s.ackFor(h, err); err != nil {
		return toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	return stream.SendAndClose(&tabulapb.IngestRowsResponse{
		Rows: res.Rows, Cells: res.Cells, Files: int64(res.Files), Bytes: int64(res.Bytes),
	})
}

// received is one message of an IngestRows call, or the error that ended
// its receiving (io.EOF when the client closed its side).
type received struct {
	msg *convert.IngestRequest
	err error
}

// recvIngest receives one message of the call, its rows decoded straight
// into cells (convert.IngestRequest: the server's codec is convert.Codec).
func recvIngest(stream tabulapb.BulkLoad_IngestRowsServer) (*convert.IngestRequest, error) {
	m := new(convert.IngestRequest)
	if err := stream.RecvMsg(m); err != nil {
		return nil, err
	}
	return m, nil
}

// receiveIngest receives the call's messages in a goroutine of its own, so that
// the handler can give up on a client that sends nothing
// (Options.IngestIdleTimeout); it ends with the call (when the handler
// returns, gRPC cancels the stream and Recv fails).
func receiveIngest(ctx context.Context, stream tabulapb.BulkLoad_IngestRowsServer) <-chan received {
	out := make(chan received)
	go func() {
		for {
			msg, err := recvIngest(stream)
			select {
			case out <- received{msg, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}
