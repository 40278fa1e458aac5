package gateway

import (
	"bytes"
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"

	"github.com/tabuladb/tabula/client"
)

// ReadRows streams the rows of a row set through a filter, in row-key order
// (descending when reversed), as cell chunks. Each row ends with a chunk
// marked commit_row; a value larger than Options.ChunkBytes goes across
// several chunks, all but the last giving the whole value's size, and a
// row larger than that across several messages unless the caller reads
// only whole rows per message (chunkWriter). A failure mid-stream ends it
// with a status: Bigtable clients retry UNAVAILABLE and DEADLINE_EXCEEDED
// by asking again for the rows after the last committed one, which the
// gateway serves like any request.
func (d *dataServer) ReadRows(req *btpb.ReadRowsRequest, stream btpb.Bigtable_ReadRowsServer) error {
	start := time.Now()
	if err := viewsUnsupported(req.GetAuthorizedViewName(), req.GetMaterializedViewName()); err != nil {
		return err
	}
	tbl, _, err := d.s.table(stream.Context(), "table_name", req.GetTableName())
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
	key, single := singleRow(req.GetRows())
	var rows client.RowSet
	if !single || len(key) == 0 { // a point read needs no row set, only its checks
		if rows, err = rowSet(req.GetRows()); err != nil {
			return err
		}
	}
	ctx := stream.Context()
	w := chunkWriter{max: d.s.opts.ChunkBytes, wholeRows: d.s.opts.WholeRows(userAgent(ctx))}
	if d.s.wire {
		// Each row is encoded as it comes, so Tabula's client may hand
		// out rows that its next row overwrites.
		w.sink = &wireSink{stream: stream}
	} else {
		w.sink = &messageSink{sendMsg: stream.Send}
	}
	var stats btpb.ReadIterationStats
	emit := func(row client.Row) error {
		if len(row.Cells) == 0 {
			return nil // Bigtable never returns a row without cells
		}
		stats.RowsReturnedCount++
		stats.CellsReturnedCount += int64(len(row.Cells))
		return w.row(row)
	}
	if single {
		// A point read (what the clients' ReadRow sends): Tabula's unary
		// ReadRow, cheaper than a stream, gives the same row.
		row, err := tbl.ReadRow(ctx, key, client.WithFilter(f))
		if err != nil {
			return toStatus(err)
		}
		if err := emit(row); err != nil {
			return err
		}
	} else {
		opts := []client.ReadOption{client.WithFilter(f), client.LimitRows(req.GetRowsLimit())}
		if d.s.wire {
			opts = append(opts, client.ReuseRows())
		}
		if req.GetReversed() {
			opts = append(opts, client.Reverse())
		}
		it := tbl.ReadRows(ctx, rows, opts...)
		defer it.Close()
		for it.Next() {
			if err := emit(it.Row()); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return toStatus(err)
		}
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

// singleRow returns the key of a row set of exactly one row key and no
// range: a point read, whatever the request's limit or direction.
func singleRow(rs *btpb.RowSet) ([]byte, bool) {
	if len(rs.GetRowKeys()) != 1 || len(rs.GetRowRanges()) != 0 {
		return nil, false
	}
	return rs.GetRowKeys()[0], true
}

// userAgent is the gRPC user agent the caller sent, "" when none.
func userAgent(ctx context.Context) string {
	return strings.Join(metadata.ValueFromIncomingContext(ctx, "user-agent"), " ")
}

// WholeRowsForGo is the default of Options.WholeRows: whole rows for
// callers on Go's gRPC (user agent "grpc-go/..."), that is Google's Go
// client and cbt. Their reader checks after every message that no row is
// left half read (cloud.google.com/go/bigtable reader.go: chunkReader.Close
// after each response), so a row split across messages fails there.
// The Java, Python and Node.js clients read chunks as one stream across
// messages and get large rows split.
func WholeRowsForGo(userAgent string) bool { return strings.Contains(userAgent, "grpc-go/") }

// chunkWriter turns rows into ReadRowsResponse messages of about max bytes
// of values each. A row that fits in max bytes is never split across
// messages: the message before it is sent first if the row would not fit
// in it. A larger row goes in messages of about max bytes each, its values
// split across chunks (value_size, the whole value's size, on all but the
// last chunk of a value), so that a client with gRPC's default 4 MiB
// receive limit reads a 10 MiB value, as Cloud Bigtable streams one.
// Every message that begins inside a row names the row again on its first
// chunk: the Python client takes the first chunk of each message as the
// start of a row and refuses an empty key after a committed row; the Java
// and Node.js clients accept the key there, and the protocol allows it.
//
// With wholeRows a message always ends at the end of a row, however
// large, for readers that want that (WholeRowsForGo).
//
// These rules are the writer's; what a message is made of is its sink's:
// protos for gRPC's codec (messageSink), or the message's bytes written
// as the chunks come (wireSink, wire.go), which the two must agree on
// (TestWireSinkEncodesTheMessages).
type chunkWriter struct {
	sink      chunkSink
	max       int
	wholeRows bool
	chunks    int // in the message being built
	bytes     int
	// ch is the chunk being added: a field, not a local, as a chunk
	// handed to the sink (an interface) would be allocated per cell.
	ch chunk
}

// chunkSink builds and sends the messages of a chunkWriter.
type chunkSink interface {
	// add appends a chunk to the message being built. wireSink copies the
	// chunk's slices; messageSink refers to them until the message is
	// sent.
	add(ch *chunk)
	// send sends the message of the chunks added since the last send
	// (at least one).
	send() error
}

// chunk is a ReadRowsResponse.CellChunk as chunkWriter decides it.
type chunk struct {
	rowKey       []byte // empty: not set
	family       string
	hasFamily    bool // family_name is set (to family)
	qualifier    []byte
	hasQualifier bool // qualifier is set (to qualifier, maybe empty)
	timestamp    int64
	labels       []string
	value        []byte
	valueSize    int32
	commit       bool
}

// chunkOverhead is what a chunk costs in a message beyond its value, key
// and qualifier, about: tags, lengths, family, timestamp.
const chunkOverhead = 32

func (w *chunkWriter) row(row client.Row) error {
	if w.chunks > 0 && w.bytes+rowBytes(row) > w.max {
		if err := w.flush(); err != nil {
			return err
		}
	}
	for i := range row.Cells {
		c := &row.Cells[i]
		ch := &w.ch
		*ch = chunk{qualifier: c.Qualifier, hasQualifier: true, timestamp: c.Timestamp, labels: c.Labels}
		if i == 0 || row.Cells[i-1].Family != c.Family || w.chunks == 0 {
			ch.family, ch.hasFamily = c.Family, true
		}
		v := c.Value
		for {
			n := min(len(v), w.max)
			ch.value = v[:n]
			v = v[n:]
			if len(v) > 0 {
				ch.valueSize = int32(len(c.Value))
			}
			if len(v) == 0 && i == len(row.Cells)-1 {
				ch.commit = true
			}
			if i == 0 && len(v)+n == len(c.Value) || w.chunks == 0 {
				ch.rowKey = row.Key // the row's first chunk, or a message's
			}
			w.add(ch, n)
			if !w.wholeRows && w.bytes >= w.max && !(len(v) == 0 && i == len(row.Cells)-1) {
				if err := w.flush(); err != nil {
					return err
				}
			}
			if len(v) == 0 {
				break
			}
			*ch = chunk{}
		}
	}
	if w.bytes >= w.max {
		return w.flush()
	}
	return nil
}

// rowBytes is about what row costs in a message.
func rowBytes(row client.Row) int {
	n := len(row.Key)
	for i := range row.Cells {
		c := &row.Cells[i]
		n += len(c.Value) + len(c.Qualifier) + chunkOverhead
	}
	return n
}

func (w *chunkWriter) add(ch *chunk, n int) {
	w.sink.add(ch)
	w.chunks++
	w.bytes += n + len(ch.rowKey) + len(ch.qualifier) + chunkOverhead
}

func (w *chunkWriter) flush() error {
	if w.chunks == 0 {
		return nil
	}
	w.chunks, w.bytes = 0, 0
	return w.sink.send()
}

// messageSink builds each message as protos, for gRPC's proto codec: on a
// gRPC server of one's own (Server.Register), which may not have
// convert.Codec. The chunks refer to the rows' bytes until sent.
type messageSink struct {
	sendMsg func(*btpb.ReadRowsResponse) error
	chunks  []*btpb.ReadRowsResponse_CellChunk
}

func (s *messageSink) add(c *chunk) {
	ch := &btpb.ReadRowsResponse_CellChunk{
		RowKey:          c.rowKey,
		TimestampMicros: c.timestamp,
		Labels:          c.labels,
		Value:           c.value,
		ValueSize:       c.valueSize,
	}
	if c.hasFamily {
		ch.FamilyName = wrapperspb.String(c.family)
	}
	if c.hasQualifier {
		ch.Qualifier = wrapperspb.Bytes(c.qualifier)
	}
	if c.commit {
		ch.RowStatus = &btpb.ReadRowsResponse_CellChunk_CommitRow{CommitRow: true}
	}
	s.chunks = append(s.chunks, ch)
}

func (s *messageSink) send() error {
	m := &btpb.ReadRowsResponse{Chunks: s.chunks}
	s.chunks = nil
	return s.sendMsg(m)
}

// SampleRowKeys streams keys that split the table into pieces of about
// Options.SampleBytes (every tablet's end is one too), with the bytes
// before each; the last answer is the empty key (the end of the table)
// with the table's whole size, as Bigtable's is. With a row_range, only
// the keys inside it, their offsets counted from the last sample before
// its start, and the empty key only when the range reaches the table's
// end (docs/GATEWAY.md "SampleRowKeys").
func (d *dataServer) SampleRowKeys(req *btpb.SampleRowKeysRequest, stream btpb.Bigtable_SampleRowKeysServer) error {
	if err := viewsUnsupported(req.GetAuthorizedViewName(), req.GetMaterializedViewName()); err != nil {
		return err
	}
	tbl, _, err := d.s.table(stream.Context(), "table_name", req.GetTableName())
	if err != nil {
		return err
	}
	start, end := rangeBounds(req.GetRowRange())
	samples, err := tbl.SampleRowKeys(stream.Context(), client.SampleTargetBytes(d.s.opts.SampleBytes), client.SampleRange(start, end))
	if err != nil {
		return toStatus(err)
	}
	var base, last int64
	for _, s := range samples {
		switch {
		case len(s.Key) == 0:
			last = max(last, s.OffsetBytes-base)
		case len(start) > 0 && bytes.Compare(s.Key, start) <= 0:
			base = s.OffsetBytes
		case end == nil || bytes.Compare(s.Key, end) < 0:
			if err := stream.Send(&btpb.SampleRowKeysResponse{RowKey: s.Key, OffsetBytes: s.OffsetBytes - base}); err != nil {
				return err
			}
			last = max(last, s.OffsetBytes-base)
		}
	}
	if end != nil {
		return nil
	}
	return stream.Send(&btpb.SampleRowKeysResponse{RowKey: []byte{}, OffsetBytes: last})
}
