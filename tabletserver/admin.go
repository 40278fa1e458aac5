package tabletserver

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// The calls only the master makes.

// LoadTablet opens a tablet the master assigned here (checked in etcd).
func (s *Server) LoadTablet(ctx context.Context, req *tabulapb.LoadTabletRequest) (*tabulapb.LoadTabletResponse, error) {
	info := req.GetTablet()
	if info == nil {
		return nil, toStatus(ctx, cell.Invalidf("tablet is missing"), "", "", nil)
	}
	key := tabletKey(info.GetTable(), info.GetTabletId())
	s.loads.started(key)
	err := s.load(ctx, info, req.GetSchema())
	s.loads.done(key, err)
	if err != nil {
		return nil, toStatus(ctx, err, info.GetTable(), info.GetTabletId(), nil)
	}
	return &tabulapb.LoadTabletResponse{}, nil
}

// UnloadTablet flushes and closes a tablet.
func (s *Server) UnloadTablet(ctx context.Context, req *tabulapb.UnloadTabletRequest) (*tabulapb.UnloadTabletResponse, error) {
	ref := req.GetTablet()
	s.loads.forget(tabletKey(ref.GetTable(), ref.GetTabletId()))
	if err := s.unload(ctx, ref); err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	return &tabulapb.UnloadTabletResponse{}, nil
}

// FlushTablet writes a tablet's memtable to SSTables.
func (s *Server) FlushTablet(ctx context.Context, ref *tabulapb.TabletRef) (*tabulapb.FlushTabletResponse, error) {
	h, err := s.resolve(ref, nil)
	if err == nil {
		err = h.t.Flush(ctx)
	}
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	return &tabulapb.FlushTabletResponse{}, nil
}

// CompactTablet runs a merging compaction of every family, or a major one
// after flushing the memtable.
func (s *Server) CompactTablet(ctx context.Context, req *tabulapb.CompactTabletRequest) (*tabulapb.CompactTabletResponse, error) {
	ref := req.GetTablet()
	h, err := s.resolve(ref, nil)
	if err == nil && req.GetMajor() {
		// An operator's major compaction covers the newest writes too:
		// what it drops (deleted cells, what the GC policy condemns) is
		// then gone from every file, not only from those already flushed.
		err = h.t.Flush(ctx)
	}
	if err == nil {
		err = h.t.Compact(ctx, req.GetMajor())
	}
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	return &tabulapb.CompactTabletResponse{}, nil
}

// DropRange drops the rows [start_key, end_key) of a tablet (clipped to
// its range; an empty end_key is its end) without a tombstone per cell
// (tablet.DropRange). A tablet moved, split or fenced meanwhile answers
// NotServing, and the master retries on its current owner.
func (s *Server) DropRange(ctx context.Context, req *tabulapb.DropRangeRequest) (*tabulapb.DropRangeResponse, error) {
	ref := req.GetTablet()
	var start, end []byte
	if len(req.GetStartKey()) > 0 {
		start = req.GetStartKey()
	}
	if len(req.GetEndKey()) > 0 {
		end = req.GetEndKey()
	}
	h, err := s.resolve(ref, nil)
	if err == nil {
		err = h.t.DropRange(ctx, start, end)
	}
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), nil)
	}
	return &tabulapb.DropRangeResponse{}, nil
}

// SplitTablet splits a tablet at row_key (or a middle key of its choice)
// and answers the two children, served here at the parent's epoch + 1.
func (s *Server) SplitTablet(ctx context.Context, req *tabulapb.SplitRequest) (*tabulapb.SplitTabletResponse, error) {
	ref := req.GetTablet()
	h, err := s.resolve(ref, req.GetRowKey())
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), req.GetRowKey())
	}
	children, err := s.split(ctx, h, req.GetRowKey())
	if err != nil {
		return nil, toStatus(ctx, err, ref.GetTable(), ref.GetTabletId(), req.GetRowKey())
	}
	resp := &tabulapb.SplitTabletResponse{}
	for i := range children {
		resp.Tablets = append(resp.Tablets, children[i].ToProto())
	}
	return resp, nil
}

// UpdateSchema applies a table's new families to every tablet of it held
// here. The families are read from etcd: the request only names the table
// (trustedSchema).
func (s *Server) UpdateSchema(ctx context.Context, req *tabulapb.UpdateSchemaRequest) (*tabulapb.UpdateSchemaResponse, error) {
	table := req.GetSchema().GetName()
	fail := func(err error) error { return toStatus(ctx, err, table, "", nil) }
	if err := cell.ValidateTableName(table); err != nil {
		return nil, fail(err)
	}
	sch, err := s.trustedSchema(ctx, table, req.GetSchema())
	if err != nil {
		return nil, fail(err)
	}
	fams, err := familiesFromSchema(sch)
	if err != nil {
		return nil, fail(err)
	}
	s.mu.Lock()
	s.schemas[table] = sch
	s.mu.Unlock()
	var errs []error
	for _, h := range s.heldTablets(table) {
		if err := h.t.SetFamilies(fams); err != nil && !errors.Is(err, tablet.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fail(err)
	}
	return &tabulapb.UpdateSchemaResponse{}, nil
}

// ServerStats answers the statistics of every tablet held here, sorted by
// table and start key, or with req.delta only those that changed since the
// report the caller acknowledges (package loadreport).
func (s *Server) ServerStats(ctx context.Context, req *tabulapb.ServerStatsRequest) (*tabulapb.ServerStatsResponse, error) {
	resp := &tabulapb.ServerStatsResponse{ServerId: s.id, Lease: s.leaseID.Load(), LoadWindowEndMicros: s.loadRolled.Load()}
	resp.Events = eventProtos(s.events.Since(time.UnixMicro(req.GetEventsSinceMicros())))
	if !s.Serving() {
		return resp, nil
	}
	resp.Serving = true
	var cur []*tabulapb.TabletStats
	for _, h := range s.heldTablets("") {
		ts := tabletStats(h)
		addLoad(ts, h, int(req.GetKeyQuantiles()))
		cur = append(cur, ts)
	}
	sort.Slice(cur, func(i, j int) bool {
		a, b := cur[i], cur[j]
		if a.Tablet.Table != b.Tablet.Table {
			return a.Tablet.Table < b.Tablet.Table
		}
		return string(a.StartKey) < string(b.StartKey)
	})
	s.reports.Fill(req, resp, cur) // a full or a delta report (package loadreport)
	return resp, nil
}

func tabletStats(h *held) *tabulapb.TabletStats {
	st := h.t.Stats()
	start, end := h.t.Range()
	ts := &tabulapb.TabletStats{
		Tablet:            &tabulapb.TabletRef{Table: h.table, TabletId: h.id, Epoch: h.epoch},
		StartKey:          start,
		EndKey:            end,
		SizeBytes:         int64(st.SizeBytes),
		MemtableBytes:     st.MemtableBytes,
		CompactionBacklog: int64(st.CompactionBacklog),
	}
	ts.FamilyBytes = make(map[string]int64, len(st.Families))
	for name, f := range st.Families {
		ts.FamilyBytes[name] = int64(f.Bytes)
		ts.Sstables += int32(f.SSTables)
		ts.Cells += int64(f.Cells)
		ts.Tombstones += int64(f.Tombstones)
	}
	return ts
}
