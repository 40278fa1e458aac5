package tabletserver

import (
	"context"
	"errors"
	"sync"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// ReadRows batching: a message is sent when it holds this many rows or
// bytes of cells.
const (
	readBatchRows  = 256
	readBatchBytes = 1 << 20
)

// mutateRowsParallelism bounds the tablets MutateRows applies to at once.
const mutateRowsParallelism = 8

func familiesFromSchema(s *tabulapb.TableSchema) ([]families.Family, error) {
	return convert.FamiliesFromProto(s.GetFamilies())
}

// ReadRows streams the rows of the request's row set in key order.
func (s *Server) ReadRows(req *tabulapb.ReadRowsRequest, stream tabulapb.TabletServer_ReadRowsServer) error {
	ref := req.GetTablet()
	fail := func(err error) error { return toStatus(err, ref.GetTable(), ref.GetTabletId(), nil) }
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
	opts := tablet.ReadOptions{Filter: filter, Limit: req.GetRowsLimit()}
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
	it, err := h.t.NewRowIterator(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer it.Close()
	resp := &tabulapb.ReadRowsResponse{}
	size := 0
	send := func() error {
		if len(resp.Rows) == 0 {
			return nil
		}
		// A read must not outlive the lease: another server may own the
		// tablet once it has expired.
		if !s.leaseSafe() {
			return &notServingError{table: h.table, tablet: h.id, reason: "server lease not renewed in time", cause: ErrFenced}
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
		resp, size = &tabulapb.ReadRowsResponse{}, 0
		return nil
	}
	for it.Next() {
		row := it.Row()
		cells := it.Cells()
		resp.Rows = append(resp.Rows, convert.CellsToProtoRow(row, cells))
		size += len(row)
		for i := range cells {
			size += len(cells[i].Family) + len(cells[i].Qualifier) + len(cells[i].Value) + 16
		}
		if len(resp.Rows) >= readBatchRows || size >= readBatchBytes {
			if err := send(); err != nil {
				return fail(err)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fail(err)
	}
	if err := it.Close(); err != nil {
		return fail(err)
	}
	return fail(send())
}

// MutateRow applies one row's mutations atomically.
func (s *Server) MutateRow(ctx context.Context, req *tabulapb.MutateRowRequest) (*tabulapb.MutateRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	if err := s.mutate(ctx, ref, row, req.GetMutations()); err != nil {
		return nil, toStatus(err, ref.GetTable(), ref.GetTabletId(), row)
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
	return h.t.Apply(ctx, row, muts)
}

// MutateRows applies each entry on its own (not atomically across rows) and
// answers a status per entry. Entries are grouped by tablet; groups run in
// parallel, each group in request order.
func (s *Server) MutateRows(ctx context.Context, req *tabulapb.MutateRowsRequest) (*tabulapb.MutateRowsResponse, error) {
	entries := req.GetEntries()
	out := make([]*tabulapb.MutateRowsResponse_Entry, len(entries))
	groups := make(map[string][]int)
	var order []string
	for i, e := range entries {
		k := tabletKey(e.GetTablet().GetTable(), e.GetTablet().GetTabletId())
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	sem := make(chan struct{}, mutateRowsParallelism)
	var wg sync.WaitGroup
	for _, k := range order {
		idx := groups[k]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for _, i := range idx {
				e := entries[i]
				err := s.mutate(ctx, e.GetTablet(), e.GetRowKey(), e.GetMutations())
				out[i] = entryStatus(i, err, e.GetTablet().GetTable(), e.GetTablet().GetTabletId(), e.GetRowKey())
			}
		}()
	}
	wg.Wait()
	return &tabulapb.MutateRowsResponse{Entries: out}, nil
}

// CheckAndMutateRow applies true_mutations when the predicate filter emits
// any cell of the row, else false_mutations, atomically.
func (s *Server) CheckAndMutateRow(ctx context.Context, req *tabulapb.CheckAndMutateRowRequest) (*tabulapb.CheckAndMutateRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	matched, err := s.checkAndMutate(ctx, req)
	if err != nil {
		return nil, toStatus(err, ref.GetTable(), ref.GetTabletId(), row)
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
	return h.t.CheckAndMutate(ctx, req.GetRowKey(), pred, onTrue, onFalse)
}

// ReadModifyWriteRow applies increment and append rules atomically and
// answers the new cells.
func (s *Server) ReadModifyWriteRow(ctx context.Context, req *tabulapb.ReadModifyWriteRowRequest) (*tabulapb.ReadModifyWriteRowResponse, error) {
	ref, row := req.GetTablet(), req.GetRowKey()
	fail := func(err error) error { return toStatus(err, ref.GetTable(), ref.GetTabletId(), row) }
	h, err := s.resolve(ref, row)
	if err != nil {
		return nil, fail(err)
	}
	rules, err := convert.RulesFromProto(req.GetRules())
	if err != nil {
		return nil, fail(err)
	}
	cells, err := h.t.ReadModifyWrite(ctx, row, rules)
	if err != nil {
		return nil, fail(err)
	}
	return &tabulapb.ReadModifyWriteRowResponse{Row: convert.CellsToProtoRow(row, cells)}, nil
}

// SampleRowKeys answers a few row keys of the tablet with the approximate
// bytes before each: the middle key (when the tablet can be split) and the
// tablet's end (empty for the end of the table), whose offset is the
// tablet's size.
func (s *Server) SampleRowKeys(ctx context.Context, req *tabulapb.SampleRowKeysRequest) (*tabulapb.SampleRowKeysResponse, error) {
	ref := req.GetTablet()
	h, err := s.resolve(ref, nil)
	if err != nil {
		return nil, toStatus(err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	size := int64(h.t.Stats().SizeBytes)
	resp := &tabulapb.SampleRowKeysResponse{}
	mid, err := h.t.SplitKey()
	switch {
	case err == nil:
		resp.Samples = append(resp.Samples, &tabulapb.SampleRowKeysResponse_Sample{RowKey: mid, OffsetBytes: size / 2})
	case !errors.Is(err, tablet.ErrNoSplitKey):
		return nil, toStatus(err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	_, end := h.t.Range()
	resp.Samples = append(resp.Samples, &tabulapb.SampleRowKeysResponse_Sample{RowKey: end, OffsetBytes: size})
	return resp, nil
}
