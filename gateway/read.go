package gateway

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/client"
)

// ReadRows streams the rows of a row set through a filter, in row-key order
// (descending when reversed), as cell chunks. Each row ends with a chunk
// marked commit_row; a value larger than Options.ChunkBytes goes across
// several chunks, all but the last giving the whole value's size. A failure
// mid-stream ends it with a status: Bigtable clients retry UNAVAILABLE and
// DEADLINE_EXCEEDED by asking again for the rows after the last committed
// one, which the gateway serves like any request.
func (d *dataServer) ReadRows(req *btpb.ReadRowsRequest, stream btpb.Bigtable_ReadRowsServer) error {
	start := time.Now()
	if err := viewsUnsupported(req.GetAuthorizedViewName(), req.GetMaterializedViewName()); err != nil {
		return err
	}
	tbl, _, err := d.s.table("table_name", req.GetTableName())
	if err != nil {
		return err
	}
	if req.GetRowsLimit() < 0 {
		return invalidf("rows_limit must be >= 0, got %d", req.GetRowsLimit())
	}
	f, err := filter(req.GetFilter())
	if err != nil {
		return err
	}
	rows, err := rowSet(req.GetRows())
	if err != nil {
		return err
	}
	opts := []client.ReadOption{client.WithFilter(f), client.LimitRows(req.GetRowsLimit())}
	if req.GetReversed() {
		opts = append(opts, client.Reverse())
	}
	ctx := stream.Context()
	it := tbl.ReadRows(ctx, rows, opts...)
	defer it.Close()
	w := chunkWriter{send: stream.Send, max: d.s.opts.ChunkBytes}
	var stats btpb.ReadIterationStats
	for it.Next() {
		row := it.Row()
		if len(row.Cells) == 0 {
			continue // Bigtable never returns a row without cells
		}
		stats.RowsReturnedCount++
		stats.CellsReturnedCount += int64(len(row.Cells))
		if err := w.row(row); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return toStatus(err)
	}
	if err := w.flush(); err != nil {
		return err
	}
	if req.GetRequestStatsView() != btpb.ReadRowsRequest_REQUEST_STATS_FULL {
		return nil
	}
	// Tabula's servers filter before they send, so the gateway sees only
	// the rows and cells returned: it reports those as seen too.
	stats.RowsSeenCount, stats.CellsSeenCount = stats.RowsReturnedCount, stats.CellsReturnedCount
	return stream.Send(&btpb.ReadRowsResponse{RequestStats: &btpb.RequestStats{
		StatsView: &btpb.RequestStats_FullReadStatsView{FullReadStatsView: &btpb.FullReadStatsView{
			ReadIterationStats:  &stats,
			RequestLatencyStats: &btpb.RequestLatencyStats{FrontendServerLatency: durationpb.New(time.Since(start))},
		}},
	}})
}

// chunkWriter turns rows into ReadRowsResponse messages of about max bytes
// of values each. A message always ends at the end of a row: the Go client
// checks after every message that no row is left half read. So a row larger
// than max goes in one message, its large values split across chunks as the
// protocol allows (value_size on all but the last chunk of a value).
type chunkWriter struct {
	send  func(*btpb.ReadRowsResponse) error
	max   int
	resp  btpb.ReadRowsResponse
	bytes int
}

func (w *chunkWriter) row(row client.Row) error {
	for i := range row.Cells {
		c := &row.Cells[i]
		first := &btpb.ReadRowsResponse_CellChunk{
			Qualifier:       wrapperspb.Bytes(c.Qualifier),
			TimestampMicros: c.Timestamp,
			Labels:          c.Labels,
		}
		if i == 0 {
			first.RowKey = row.Key
		}
		if i == 0 || row.Cells[i-1].Family != c.Family {
			first.FamilyName = wrapperspb.String(c.Family)
		}
		v := c.Value
		ch := first
		for {
			n := min(len(v), w.max)
			ch.Value = v[:n]
			v = v[n:]
			if len(v) > 0 {
				ch.ValueSize = int32(len(c.Value))
			}
			if len(v) == 0 && i == len(row.Cells)-1 {
				ch.RowStatus = &btpb.ReadRowsResponse_CellChunk_CommitRow{CommitRow: true}
			}
			w.add(ch, n)
			if len(v) == 0 {
				break
			}
			ch = &btpb.ReadRowsResponse_CellChunk{}
		}
	}
	if w.bytes >= w.max {
		return w.flush()
	}
	return nil
}

func (w *chunkWriter) add(ch *btpb.ReadRowsResponse_CellChunk, n int) {
	w.resp.Chunks = append(w.resp.Chunks, ch)
	w.bytes += n + len(ch.RowKey) + 32
}

func (w *chunkWriter) flush() error {
	if len(w.resp.Chunks) == 0 {
		return nil
	}
	err := w.send(&btpb.ReadRowsResponse{Chunks: w.resp.Chunks})
	w.resp.Chunks, w.bytes = nil, 0
	return err
}

// SampleRowKeys streams keys that split the table into pieces of about
// equal size, with the bytes before each; the last answer is the empty key
// (the end of the table) with the table's whole size, as Bigtable's is.
func (d *dataServer) SampleRowKeys(req *btpb.SampleRowKeysRequest, stream btpb.Bigtable_SampleRowKeysServer) error {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), req.GetMaterializedViewName()); err != nil {
		return err
	}
	tbl, _, err := d.s.table("table_name", req.GetTableName())
	if err != nil {
		return err
	}
	samples, err := tbl.SampleRowKeys(stream.Context())
	if err != nil {
		return toStatus(err)
	}
	var last int64
	for _, s := range samples {
		if len(s.Key) == 0 {
			continue
		}
		if err := stream.Send(&btpb.SampleRowKeysResponse{RowKey: s.Key, OffsetBytes: s.OffsetBytes}); err != nil {
			return err
		}
		last = max(last, s.OffsetBytes)
	}
	return stream.Send(&btpb.SampleRowKeysResponse{RowKey: []byte{}, OffsetBytes: last})
}
