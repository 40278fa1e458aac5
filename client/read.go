package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Row is one row a read returns: its key and its cells in read order
// (family, qualifier ascending, timestamp descending). A cell carries the
// labels a rowfilter.Label in the read's filter put on it (cell.Labels);
// with interleaves or sinks, the same cell may come more than once.
type Row struct {
	Key   []byte
	Cells []cell.Cell
}

// ReadOption changes a read.
type ReadOption interface{ apply(*readSettings) }

type readSettings struct {
	filter  *rowfilter.Filter
	limit   int64
	reverse bool
	reuse   bool
}

type readOptionFunc func(*readSettings)

func (f readOptionFunc) apply(s *readSettings) { f(s) }

// WithFilter applies f to every row read (server side).
func WithFilter(f *rowfilter.Filter) ReadOption {
	return readOptionFunc(func(s *readSettings) { s.filter = f })
}

// LimitRows stops a read after n rows; n <= 0 means no limit.
func LimitRows(n int64) ReadOption {
	return readOptionFunc(func(s *readSettings) { s.limit = n })
}

// Reverse makes ReadRows return the rows in descending key order, as Cloud
// Bigtable's reversed ReadRowsRequest: the tablets are read from the last
// to the first, each scanned backwards on its server. The cells of each
// row keep the read order (family, qualifier ascending, timestamp
// descending), a filter applies to each row as in a forward read, and
// LimitRows counts from the highest row. A read that resumes after a
// retry (a tablet moved or split, a server failed) asks for the rows
// below the last one it returned. It changes nothing for ReadRow.
func Reverse() ReadOption {
	return readOptionFunc(func(s *readSettings) { s.reverse = true })
}

// ReuseRows lets ReadRows hand out rows whose slices (the key, the cells
// and their bytes) are valid only until the next call to Next (or
// Close), as the engine's tablet.ReadOptions.ReuseCells: the rows point
// into the received messages, which the iterator reuses, instead of each
// being copied into memory of its own. For a reader that is done with
// each row before the next (one that counts, converts or writes rows
// elsewhere); it makes a scan cheaper for the client, not the server
// (docs/BENCHMARKS.md "Scans over the wire"). Copy what must be kept
// (Row.Clone). It changes nothing for ReadRow.
func ReuseRows() ReadOption {
	return readOptionFunc(func(s *readSettings) { s.reuse = true })
}

// Clone returns a copy of r whose slices are its own (from an iterator
// with ReuseRows, a row to keep past the next Next).
func (r Row) Clone() Row {
	out := Row{Key: bytes.Clone(r.Key), Cells: make([]cell.Cell, len(r.Cells))}
	for i, c := range r.Cells {
		c.Row, c.Qualifier, c.Value, c.Labels = out.Key, bytes.Clone(c.Qualifier), bytes.Clone(c.Value), slices.Clone(c.Labels)
		out.Cells[i] = c
	}
	if r.Cells == nil {
		out.Cells = nil
	}
	return out
}

// ReadRow reads one row. An absent row (or one the filter empties) is a
// Row with the key and no cells, not an error. It is one unary call to
// the tablet server (readrow.go), or a ReadRows stream when that cannot
// answer.
func (t *Table) ReadRow(ctx context.Context, key []byte, opts ...ReadOption) (Row, error) {
	if row, ok, err := t.readRow(ctx, key, opts); ok {
		return row, err
	}
	it := t.ReadRows(ctx, SingleRow(key), opts...)
	defer it.Close()
	if it.Next() {
		return it.Row(), nil
	}
	if err := it.Err(); err != nil {
		return Row{}, err
	}
	return Row{Key: key}, nil
}

// ReadRows reads the rows of rs (nil: the whole table) in key order
// (descending with Reverse), across as many tablets as the set spans. Close the iterator when done
// with it.
func (t *Table) ReadRows(ctx context.Context, rs RowSet, opts ...ReadOption) *RowIterator {
	var s readSettings
	for _, o := range opts {
		o.apply(&s)
	}
	if rs == nil {
		rs = InfiniteRange(nil)
	}
	ctx, cancel := context.WithCancel(ctx)
	it := &RowIterator{t: t, ctx: ctx, cancel: cancel, set: rs.spans(), limit: s.limit, pos: []byte{}, r: t.c.newRetrier(), reverse: s.reverse}
	it.resp.Borrow = s.reuse
	if s.limit < 0 {
		it.limit = 0
	}
	if s.filter != nil {
		if _, err := rowfilter.Compile(s.filter); err != nil {
			it.err = status.Error(codes.InvalidArgument, err.Error())
		}
		it.filter = convert.FilterToProto(s.filter)
	}
	return it
}

// RowIterator walks the rows of a read. It is not safe for concurrent use.
//
// Under the hood it reads one tablet at a time with a stream holding the
// row set clipped to the tablet; when a stream fails with a retryable
// error it re-locates and resumes after the last row it returned (below
// it, in a reversed read).
type RowIterator struct {
	t      *Table
	ctx    context.Context
	cancel context.CancelFunc
	set    rowSpans
	filter *tabulapb.RowFilter
	limit  int64 // 0: none

	pos []byte // every row before pos has been returned or skipped
	// reverse: rows come in descending order, and every row at or after
	// hi (nil: none yet) has been returned or skipped; pos is unused.
	reverse bool
	hi      []byte
	emitted int64
	done    bool
	r       *retrier

	tablet       locator.Tablet
	tabletRow    []byte // the row tablet was located for
	stream       tabulapb.TabletServer_ReadRowsClient
	streamCtx    context.Context
	streamCancel context.CancelCauseFunc
	watch        timer                // cancels the stream when a message is late; nil without AttemptTimeout
	resp         convert.ScanResponse // receives each message, its buffer reused
	rows         []convert.WireRow    // received whole, not yet returned
	buf          []*tabulapb.Row      // received parts of rows, not yet joined
	join         convert.RowJoiner    // rows sent in parts

	row Row
	err error
}

// Next advances to the next row, reporting false at the end or on error
// (see Err).
func (it *RowIterator) Next() bool {
	for {
		if it.done || it.err != nil {
			it.finish()
			return false
		}
		if it.limit > 0 && it.emitted >= it.limit {
			it.done = true
			continue
		}
		if len(it.rows) > 0 {
			w := it.rows[0]
			it.rows[0] = convert.WireRow{}
			it.rows = it.rows[1:]
			if it.take(w.Key, w.Cells) {
				return true
			}
			continue
		}
		if len(it.buf) > 0 {
			p, err := it.join.Add(it.buf[0])
			it.buf[0] = nil
			it.buf = it.buf[1:]
			if err != nil {
				it.err = status.Error(codes.Internal, err.Error())
				continue
			}
			if p == nil {
				continue // a part of a row larger than one message
			}
			if it.take(p.GetKey(), convert.CellsFromProtoRow(p)) {
				return true
			}
			continue
		}
		if it.stream == nil {
			it.open()
			continue
		}
		resp, err := it.recv()
		if err == io.EOF {
			it.closeStream()
			it.passTablet()
			continue
		}
		if err != nil {
			it.closeStream()
			it.retry(err, true)
			continue
		}
		it.rows, it.buf = resp.Rows, resp.Parts.GetRows()
	}
}

// take makes a received row the current one, unless it was returned
// before (a duplicate after a resume) or was not asked for.
func (it *RowIterator) take(key []byte, cells []cell.Cell) bool {
	if !it.fresh(key) || !it.set.contains(key) {
		return false
	}
	it.row = Row{Key: key, Cells: cells}
	if it.reverse {
		it.hi = key
		if it.resp.Borrow {
			it.hi = bytes.Clone(key) // key lies in a message the next receive reuses
		}
	} else {
		it.pos = successor(key)
	}
	it.emitted++
	it.r.progress()
	return true
}

// fresh reports whether key is past what the iteration has returned: after
// pos, or below hi in a reversed read.
func (it *RowIterator) fresh(key []byte) bool {
	if it.reverse {
		return it.hi == nil || bytes.Compare(key, it.hi) < 0
	}
	return bytes.Compare(key, it.pos) >= 0
}

// passTablet notes that the stream of the current tablet ended: every row
// of the set in it has been returned.
func (it *RowIterator) passTablet() {
	if it.reverse {
		if len(it.tablet.Start) == 0 {
			it.done = true
		} else if it.hi == nil || bytes.Compare(it.tablet.Start, it.hi) < 0 {
			it.hi = it.tablet.Start
		}
		return
	}
	if len(it.tablet.End) == 0 {
		it.done = true
	} else if bytes.Compare(it.pos, it.tablet.End) < 0 {
		it.pos = it.tablet.End
	}
}

// locateNext locates the tablet holding the next rows of the set: the
// lowest row at or after pos, or in a reversed read the highest rows below
// hi. It returns the tablet, a row of the set in it (for location
// checks), and the set clipped to the tablet; ok is false when no row is
// left.
func (it *RowIterator) locateNext() (tab locator.Tablet, row []byte, rows *tabulapb.RowSet, ok bool, err error) {
	if !it.reverse {
		lo, ok := it.set.first(it.pos)
		if !ok {
			return tab, nil, nil, false, nil
		}
		tab, err := it.t.c.loc.Locate(it.ctx, it.t.name, lo)
		if err != nil {
			return tab, nil, nil, true, err
		}
		return tab, lo, it.set.clip(lo, tab.End), true, nil
	}
	lo, end, point, ok := it.set.last(it.hi)
	if !ok {
		return tab, nil, nil, false, nil
	}
	if point {
		if tab, err = it.t.c.loc.Locate(it.ctx, it.t.name, lo); err != nil {
			return tab, nil, nil, true, err
		}
	} else {
		// The rows just below end have no key to locate them by: the
		// tablet holding them is the last one overlapping [lo, end).
		ts, err := it.t.c.loc.LocateRange(it.ctx, it.t.name, lo, end)
		if err != nil {
			return tab, nil, nil, true, err
		}
		if len(ts) == 0 {
			return tab, nil, nil, true, status.Errorf(codes.Unavailable, "client: no tablet of table %s overlaps [%q, %q); retry", it.t.name, lo, end)
		}
		tab = ts[len(ts)-1]
		if bytes.Compare(lo, tab.Start) < 0 {
			lo = tab.Start
		}
	}
	hi := tab.End
	if it.hi != nil && (len(hi) == 0 || bytes.Compare(it.hi, hi) < 0) {
		hi = it.hi
	}
	return tab, lo, it.set.clip(tab.Start, hi), true, nil
}

// open locates the tablet of the next rows of the set and starts a stream
// there, or ends the iteration when no row is left.
func (it *RowIterator) open() {
	tab, lo, rows, ok, err := it.locateNext()
	if !ok {
		it.done = true
		return
	}
	if err != nil {
		if it.ctx.Err() != nil {
			it.err = contextStatus(it.ctx, it.r.last)
			return
		}
		retry, st := locateError(err)
		if !retry {
			it.err = st
			return
		}
		if werr := it.r.wait(it.ctx, st); werr != nil {
			it.err = werr
		}
		return
	}
	ts, err := it.t.c.pool.server(tab.Address)
	if err != nil {
		it.err = err
		return
	}
	req := &tabulapb.ReadRowsRequest{Tablet: tab.Ref(), Rows: rows, Filter: it.filter, Reversed: it.reverse}
	if it.limit > 0 {
		req.RowsLimit = it.limit - it.emitted
	}
	sctx, cancel := context.WithCancelCause(it.ctx)
	var watch timer
	if d := it.t.c.opts.AttemptTimeout; d > 0 {
		watch = it.t.c.attemptTimer(d, func() { cancel(errAttemptTimeout) })
	}
	// convert.Codec decodes the stream's rows straight into cells.
	stream, err := ts.ReadRows(sctx, req, grpc.ForceCodecV2(convert.Codec{}))
	if err != nil {
		if watch != nil {
			watch.Stop()
		}
		if it.ctx.Err() == nil && errors.Is(context.Cause(sctx), errAttemptTimeout) {
			err = it.t.c.timeoutError(tab.Address, err)
		}
		cancel(nil)
		it.tablet = tab
		it.retry(err, true)
		return
	}
	it.tablet, it.tabletRow, it.stream, it.streamCtx, it.streamCancel, it.watch = tab, lo, stream, sctx, cancel, watch
}

// recv waits for the stream's next message, at most AttemptTimeout: a
// server that stops answering mid-stream (paused, partitioned) fails the
// stream with UNAVAILABLE, and Next resumes elsewhere after the last row.
// While it waits, the tablet's location is checked (checkLocation): if the
// tablet moved, the stream is abandoned at once and Next resumes at the
// new owner.
func (it *RowIterator) recv() (*convert.ScanResponse, error) {
	if it.watch != nil {
		it.watch.Reset(it.t.c.opts.AttemptTimeout)
	}
	check := it.t.c.checkLocation(it.streamCtx, it.streamCancel, placed{it.tablet, it.tabletRow})
	// Rows are taken whole unless a row in parts is being joined: its
	// last part must go to the joiner.
	resp := &it.resp
	resp.Whole = !it.join.Pending()
	err := it.stream.RecvMsg(resp)
	moved := check.stop()
	if it.watch != nil {
		it.watch.Stop()
	}
	if err != nil && err != io.EOF && it.ctx.Err() == nil {
		switch {
		case moved != nil:
			err = moved
		case errors.Is(context.Cause(it.streamCtx), errMoved):
			// An earlier wait's check abandoned the stream just as its
			// message arrived.
			err = rerouted(it.tablet)
		case errors.Is(context.Cause(it.streamCtx), errAttemptTimeout):
			err = it.t.c.timeoutError(it.tablet.Address, err)
		}
	}
	return resp, err
}

// retry handles a failed stream: evict, back off and let Next re-open, or
// record the error.
func (it *RowIterator) retry(err error, idempotent bool) {
	if it.ctx.Err() != nil {
		it.err = contextStatus(it.ctx, err)
		return
	}
	if isReroute(err) {
		// The locator has cached the new location: go there now.
		it.r.last = err
		return
	}
	retry, evict := serverError(err, idempotent)
	if evict {
		it.t.c.loc.Invalidate(it.tablet)
	}
	if !retry {
		it.err = err
		return
	}
	if werr := it.r.wait(it.ctx, err); werr != nil {
		it.err = werr
	}
}

func (it *RowIterator) closeStream() {
	if it.watch != nil {
		it.watch.Stop()
	}
	if it.streamCancel != nil {
		it.streamCancel(nil)
	}
	it.stream, it.streamCtx, it.streamCancel, it.watch, it.rows, it.buf, it.tabletRow = nil, nil, nil, nil, nil, nil, nil
	it.join.Reset() // a row cut short is read again after pos
}

func (it *RowIterator) finish() {
	it.closeStream()
	it.cancel()
}

// Row returns the current row. Its slices stay valid after Next, unless
// the read has ReuseRows. Rows share memory with the rows read around
// them (chunks of 32 KiB): a row kept while the others are dropped keeps
// its chunk.
func (it *RowIterator) Row() Row { return it.row }

// Err returns the error that ended the iteration, if any.
func (it *RowIterator) Err() error {
	if errors.Is(it.err, context.Canceled) {
		return status.FromContextError(it.err).Err()
	}
	return it.err
}

// Close ends the iteration and releases its stream. It is idempotent.
func (it *RowIterator) Close() {
	if !it.done && it.err == nil {
		it.done = true
	}
	it.finish()
}
