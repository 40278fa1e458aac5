package tabletserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/tabletserver/load"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// ReadRows batching: a message is sent when it holds this many rows or
// bytes of cells. Rows of more than 256 bytes fill a message by bytes: a
// message of 1 MiB costs the stream's fixed work once per 1,000 rows of
// 1 KB instead of once per 256 (docs/BENCHMARKS.md "Scans over the
// wire").
const (
	readBatchRows  = 4096
	readBatchBytes = 1 << 20
)

// mutateRowsParallelism bounds the rows one MutateRows call applies at
// once. The rows of a call wait for the same commit log syncs, so the bound
// is about goroutines and memory, not CPU.
const mutateRowsParallelism = 128

func familiesFromSchema(s *tabulapb.TableSchema) ([]families.Family, error) {
	return convert.FamiliesFromProto(s.GetFamilies())
}

// ReadRows streams the rows of the request's row set in key order, or in
// descending order when the request is reversed (a row sent in parts
// still sends its parts in order).
func (s *Server) ReadRows(req *tabulapb.ReadRowsRequest, stream tabulapb.TabletServer_ReadRowsServer) error {
	ref := req.GetTablet()
	fail := func(err error) error { return toStatus(stream.Context(), err, ref.GetTable(), ref.GetTabletId(), nil) }
	h, err := s.resolve(ref, nil)
	if err != nil {
		return fail(err)
	}
	if req.GetRowsLimit() < 0 {
		return fail(cell.Invalidf("rows_limit %d is negative", req.GetRowsLimit()))
	}
	filter, err := convert.FilterFromProto(req.GetFilter())
	if err != nil {
		return fail(err)
	}
	opts := tablet.ReadOptions{Filter: filter, Limit: req.GetRowsLimit(), Reverse: req.GetReversed()}
	for _, k := range req.GetRows().GetRowKeys() {
		if err := cell.ValidateRow(k); err != nil {
			return fail(err)
		}
		opts.Keys = append(opts.Keys, k)
	}
	for _, r := range req.GetRows().GetRowRanges() {
		opts.Ranges = append(opts.Ranges, tablet.RowRange{Start: nilIfEmpty(r.GetStartKey()), End: nilIfEmpty(r.GetEndKey())})
	}
	ctx := stream.Context()
	if len(opts.Keys) == 1 && len(opts.Ranges) == 0 {
		return fail(s.readOneRow(stream, h, opts)) // a point read: not counted as a scan
	}
	select {
	case s.scans <- struct{}{}:
	default:
		s.counters.scansRejected.Add(1)
		return fail(fmt.Errorf("tabletserver: %w: %d scans are running on this server; retry later", tablet.ErrResourceExhausted, cap(s.scans)))
	}
	guard := newStallGuard(stream, s.opts.ScanStallTimeout)
	err = guard.run(&s.work, func() error {
		defer func() { <-s.scans }()
		return s.scan(ctx, h, opts, guard)
	})
	if err == errScanNotStarted {
		<-s.scans // the scan that would have freed it never ran
	}
	if _, ok := err.(*stalledError); ok {
		s.counters.scansStalled.Add(1)
	}
	return fail(err)
}

// scan streams the rows of a range scan (ReadRows past its checks). Its
// errors are not yet statuses.
func (s *Server) scan(ctx context.Context, h *held, opts tablet.ReadOptions, stream tabulapb.TabletServer_ReadRowsServer) error {
	// A scan's load is recorded at its first row: the meter samples where
	// requests land, not every row they read.
	begin, sent := time.Now(), 0
	defer func() {
		record(h, load.Read, firstRow(h, opts), sent, begin)
		s.chargeRead(ctx, h.table, sent)
	}()
	sender := newSender(stream)
	opts.Progress = sender.progress
	// Each row is converted (its cells copied into the message) before
	// the next Next, so the iterator may reuse its cells.
	opts.ReuseCells = true
	it, err := h.t.NewRowIterator(ctx, opts)
	if err != nil {
		return err
	}
	defer it.Close()
	// Rows are encoded straight into the message's bytes (convert.RowBatch);
	// only a row too large for one message goes in parts, as messages.
	var batch convert.RowBatch
	defer batch.Free()
	send := func(parts *tabulapb.ReadRowsResponse) error {
		if _, rows := batch.Len(); rows == 0 && parts == nil {
			return sender.err // a failed heartbeat broke the stream
		}
		// A read must not outlive the lease: another server may own the
		// tablet once it has expired.
		if !s.owns(h) {
			return errLeaseLapsed(h)
		}
		if parts != nil {
			return sender.send(parts)
		}
		return sender.sendRows(batch.Take())
	}
	for it.Next() {
		row, cells := it.Row(), it.Cells()
		rs := convert.CellsSize(row, cells)
		sent += rs
		if rs > readBatchBytes {
			// A row larger than a message goes in parts, each alone.
			if err := send(nil); err != nil {
				return err
			}
			for _, part := range convert.SplitRow(convert.CellsToProtoRow(row, cells), readBatchBytes) {
				if err := send(&tabulapb.ReadRowsResponse{Rows: []*tabulapb.Row{part}}); err != nil {
					return err
				}
			}
			continue
		}
		batch.Add(row, cells)
		if size, rows := batch.Len(); rows >= readBatchRows || size >= readBatchBytes {
			if err := send(nil); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := it.Close(); err != nil {
		return err
	}
	return send(nil)
}

// readOneRow answers a read of a single row key (the common point read)
// without a row iterator.
func (s *Server) readOneRow(stream tabulapb.TabletServer_ReadRowsServer, h *held, opts tablet.ReadOptions) error {
	row := opts.Keys[0]
	begin, sent := time.Now(), 0
	defer func() {
		record(h, load.Read, row, sent, begin)
		s.chargeRead(stream.Context(), h.table, sent)
	}()
	pr, err := s.pointRead(stream.Context(), h, row, opts.Filter)
	if err != nil || pr == nil {
		return err
	}
	for _, part := range convert.SplitRow(pr, readBatchBytes) {
		sent += convert.RowSize(part)
		if !s.owns(h) {
			return errLeaseLapsed(h)
		}
		if err := stream.Send(&tabulapb.ReadRowsResponse{Rows: []*tabulapb.Row{part}}); err != nil {
			return err
		}
	}
	return nil
}

// ReadRow answers the point read of ReadRows as a unary call: gRPC
// spends less on it than on a stream (docs/BENCHMARKS.md "Requests near
// the gRPC floor"). A row larger than one ReadRows message is not sent:
// the answer says so (too_large) and the client reads it with ReadRows,
// so that no unary answer is larger than a stream's message.
func (s *Server) ReadRow(ctx context.Context, req *tabulapb.ReadRowRequest) (*tabulapb.ReadRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	fail := func(err error) error { return toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil) }
	h, err := s.resolve(ref, nil)
	if err != nil {
		return nil, fail(err)
	}
	if err := cell.ValidateRow(row); err != nil {
		return nil, fail(err)
	}
	filter, err := convert.FilterFromProto(req.GetFilter())
	if err != nil {
		return nil, fail(err)
	}
	begin, sent := time.Now(), 0
	defer func() {
		record(h, load.Read, row, sent, begin)
		s.chargeRead(ctx, h.table, sent)
	}()
	pr, err := s.pointRead(ctx, h, row, filter)
	if err != nil {
		return nil, fail(err)
	}
	if pr == nil {
		return &tabulapb.ReadRowResponse{}, nil
	}
	n := convert.RowSize(pr)
	if n > readBatchBytes {
		return &tabulapb.ReadRowResponse{TooLarge: true}, nil
	}
	sent = n
	if !s.owns(h) {
		return nil, fail(errLeaseLapsed(h))
	}
	return &tabulapb.ReadRowResponse{Row: pr}, nil
}

// pointRead reads one row of h: nil when it has no cells (or lies
// outside the tablet, which a read ignores, as the row iterator does).
func (s *Server) pointRead(ctx context.Context, h *held, row []byte, filter *rowfilter.Filter) (*tabulapb.Row, error) {
	cells, err := h.t.ReadRow(ctx, row, filter)
	if errors.Is(err, tablet.ErrOutOfRange) {
		return nil, nil
	}
	if err != nil || len(cells) == 0 {
		return nil, err
	}
	return convert.CellsToProtoRow(row, cells), nil
}

// errLeaseLapsed is the error of a read whose answer is ready after the
// server's lease ran out: another server may own the tablet by now.
func errLeaseLapsed(h *held) error {
	return &notServingError{table: h.table, tablet: h.id, reason: "server lease not renewed in time", cause: ErrFenced}
}

// MutateRow applies one row's mutations atomically.
func (s *Server) MutateRow(ctx context.Context, req *tabulapb.MutateRowRequest) (*tabulapb.MutateRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	if err := s.mutate(ctx, ref, row, req.GetMutations()); err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), row)
	}
	return &tabulapb.MutateRowResponse{}, nil
}

func (s *Server) mutate(ctx context.Context, ref *tabulapb.TabletRef, row []byte, ms []*tabulapb.Mutation) error {
	h, err := s.resolve(ref, row)
	if err != nil {
		return err
	}
	muts, err := convert.MutationsFromProto(ms)
	if err != nil {
		return err
	}
	defer record(h, load.Write, row, mutationBytes(ms), time.Now())
	_, err = freshSchema(ctx, s, h, func() (struct{}, error) { return struct{}{}, h.t.Apply(ctx, row, muts) })
	return s.ackFor(h, err)
}

// errNoStore is refreshSchema's answer on a server without etcd.
var errNoStore = errors.New("tabletserver: no coordination store to read the schema from")

// freshSchema runs write, and once more after reading the table's schema
// from etcd if the tablet refused it for an unknown family. A schema
// change the master acknowledged may not have reached this tablet yet (the
// tablet was loading, with the schema read before the change, when the
// master pushed it; or the push failed), and a write after the admin call
// returned must see it (docs/CONTRACTS.md). The tablet refuses an unknown
// family before it writes anything, so trying again is safe; a family that
// etcd does not have either is refused as before.
func freshSchema[T any](ctx context.Context, s *Server, h *held, write func() (T, error)) (T, error) {
	v, err := write()
	if !errors.Is(err, tablet.ErrUnknownFamily) {
		return v, err
	}
	if rerr := s.refreshSchema(ctx, h); rerr != nil {
		if !errors.Is(rerr, errNoStore) {
			s.logger.Warn("re-reading a schema after an unknown family", "table", h.table, "err", rerr)
		}
		return v, err
	}
	return write()
}

// refreshSchema gives h's tablet, and the server's copy, the schema of its
// table as etcd holds it now.
func (s *Server) refreshSchema(ctx context.Context, h *held) error {
	if s.etcd == nil {
		return errNoStore // a bare server of the tests: no schema but its own
	}
	sch, err := s.trustedSchema(ctx, h.table, nil)
	if err != nil {
		return err
	}
	fams, err := familiesFromSchema(sch)
	if err != nil {
		return err
	}
	if err := h.t.SetFamilies(fams); err != nil {
		return err
	}
	s.mu.Lock()
	s.schemas[h.table] = sch
	s.mu.Unlock()
	return nil
}

// MutateRows applies each entry on its own (not atomically across rows) and
// answers a status per entry. Entries of the same row (of the same tablet)
// are applied in request order; different rows are applied concurrently, up
// to mutateRowsParallelism at once, so that their commit log syncs share
// group-commit rounds instead of each waiting for its own fsync.
func (s *Server) MutateRows(ctx context.Context, req *tabulapb.MutateRowsRequest) (*tabulapb.MutateRowsResponse, error) {
	entries := req.GetEntries()
	out := make([]*tabulapb.MutateRowsResponse_Entry, len(entries))
	apply := func(i int) {
		e := entries[i]
		err := s.mutate(ctx, e.GetTablet(), e.GetRowKey(), e.GetMutations())
		out[i] = entryStatus(ctx, i, err, e.GetTablet().GetTable(), e.GetTablet().GetTabletId(), e.GetRowKey())
	}
	chains := rowChains(entries)
	workers := min(len(chains), mutateRowsParallelism)
	if workers <= 1 {
		for _, c := range chains {
			for _, i := range c {
				apply(i)
			}
		}
		return &tabulapb.MutateRowsResponse{Entries: out}, nil
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for {
			k := int(next.Add(1)) - 1
			if k >= len(chains) {
				return
			}
			for _, i := range chains[k] {
				apply(i)
			}
		}
	}
	wg.Add(workers)
	for range workers {
		s.rows.run(work)
	}
	wg.Wait()
	return &tabulapb.MutateRowsResponse{Entries: out}, nil
}

// rowChains groups the indexes of entries by (tablet, row), each group in
// request order, the groups in order of first appearance. Requests rarely
// repeat a row, so the common case allocates one slice per entry.
func rowChains(entries []*tabulapb.MutateRowsRequest_Entry) [][]int {
	chains := make([][]int, 0, len(entries))
	first := make(map[string]int, len(entries)) // chain index by tablet and row
	var key []byte
	for i, e := range entries {
		ref := e.GetTablet()
		key = append(key[:0], ref.GetTable()...)
		key = append(key, 0)
		key = append(key, ref.GetTabletId()...)
		key = append(key, 0)
		key = append(key, e.GetRowKey()...)
		if c, ok := first[string(key)]; ok {
			chains[c] = append(chains[c], i)
			continue
		}
		first[string(key)] = len(chains)
		chains = append(chains, []int{i})
	}
	return chains
}

// CheckAndMutateRow applies true_mutations when the predicate filter emits
// any cell of the row, else false_mutations, atomically.
func (s *Server) CheckAndMutateRow(ctx context.Context, req *tabulapb.CheckAndMutateRowRequest) (*tabulapb.CheckAndMutateRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	matched, err := s.checkAndMutate(ctx, req)
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), row)
	}
	return &tabulapb.CheckAndMutateRowResponse{PredicateMatched: matched}, nil
}

func (s *Server) checkAndMutate(ctx context.Context, req *tabulapb.CheckAndMutateRowRequest) (bool, error) {
	h, err := s.resolve(req.GetTablet(), req.GetRowKey())
	if err != nil {
		return false, err
	}
	pred, err := convert.FilterFromProto(req.GetPredicateFilter())
	if err != nil {
		return false, err
	}
	onTrue, err := convert.MutationsFromProto(req.GetTrueMutations())
	if err != nil {
		return false, err
	}
	onFalse, err := convert.MutationsFromProto(req.GetFalseMutations())
	if err != nil {
		return false, err
	}
	defer record(h, load.ReadWrite, req.GetRowKey(), mutationBytes(req.GetTrueMutations())+mutationBytes(req.GetFalseMutations()), time.Now())
	matched, err := freshSchema(ctx, s, h, func() (bool, error) {
		return h.t.CheckAndMutate(ctx, req.GetRowKey(), pred, onTrue, onFalse)
	})
	return matched, s.ackFor(h, err)
}

// ReadModifyWriteRow applies increment and append rules atomically and
// answers the new cells.
func (s *Server) ReadModifyWriteRow(ctx context.Context, req *tabulapb.ReadModifyWriteRowRequest) (*tabulapb.ReadModifyWriteRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	fail := func(err error) error { return toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), row) }
	h, err := s.resolve(ref, row)
	if err != nil {
		return nil, fail(err)
	}
	rules, err := convert.RulesFromProto(req.GetRules())
	if err != nil {
		return nil, fail(err)
	}
	begin := time.Now()
	cells, err := freshSchema(ctx, s, h, func() ([]cell.Cell, error) { return h.t.ReadModifyWrite(ctx, row, rules) })
	record(h, load.ReadWrite, row, len(rules)*16, begin)
	if err = s.ackFor(h, err); err != nil {
		return nil, fail(err)
	}
	return &tabulapb.ReadModifyWriteRowResponse{Row: convert.CellsToProtoRow(row, cells)}, nil
}

// DefaultSampleBytes is SampleRowKeys' interval when a request names
// none: about Cloud Bigtable's granularity (a sample every few hundred
// MB), so that a job splitting a table by the samples gets pieces of a
// size one worker reads in minutes.
const DefaultSampleBytes = 256 << 20

// SampleRowKeys answers row keys of the tablet about every target_bytes
// (DefaultSampleBytes if 0) of its data, each with the approximate bytes
// before it, then the tablet's end (empty for the end of the table) with
// the tablet's size: its SSTable data blocks within its range plus its
// memtable. The samples come from the SSTables' indexes
// (tablet.SampleKeys); the memtable's bytes are not placed among them.
func (s *Server) SampleRowKeys(ctx context.Context, req *tabulapb.SampleRowKeysRequest) (*tabulapb.SampleRowKeysResponse, error) {
	ref := req.GetTablet()
	target := req.GetTargetBytes()
	if target < 0 {
		return nil, toStatus(ctx, cell.Invalidf("target_bytes %d is negative (0 means the default, %d)", target, DefaultSampleBytes), ref.GetTable(), ref.GetTabletId(), nil)
	}
	if target == 0 {
		target = DefaultSampleBytes
	}
	h, err := s.resolve(ref, nil)
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	samples, total, err := h.t.SampleKeys(uint64(target))
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	resp := &tabulapb.SampleRowKeysResponse{Samples: make([]*tabulapb.SampleRowKeysResponse_Sample, 0, len(samples)+1)}
	for _, sm := range samples {
		resp.Samples = append(resp.Samples, &tabulapb.SampleRowKeysResponse_Sample{RowKey: sm.Row, OffsetBytes: int64(sm.Offset)})
	}
	_, end := h.t.Range()
	size := int64(total) + h.t.Stats().MemtableBytes
	resp.Samples = append(resp.Samples, &tabulapb.SampleRowKeysResponse_Sample{RowKey: end, OffsetBytes: size})
	return resp, nil
}

// firstRow is the row a read starts at, for its load sample: its first
// key or range start, or the tablet's start.
func firstRow(h *held, opts tablet.ReadOptions) []byte {
	var first []byte
	for _, k := range opts.Keys {
		if first == nil || bytes.Compare(k, first) < 0 {
			first = k
		}
	}
	for _, r := range opts.Ranges {
		if first == nil || bytes.Compare(r.Start, first) < 0 {
			first = r.Start
		}
	}
	if first == nil {
		first, _ = h.t.Range()
	}
	if first == nil {
		first = []byte{}
	}
	return first
}
