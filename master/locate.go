package master

import (
	"bytes"
	"context"
	"errors"
	"sort"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// The calls in this file only read etcd; standbys answer them too.

// ListTables lists every table's schema, sorted by name.
func (m *Master) ListTables(ctx context.Context, _ *tabulapb.ListTablesRequest) (*tabulapb.ListTablesResponse, error) {
	out := &tabulapb.ListTablesResponse{}
	schemas, ok := []*tabulapb.TableSchema(nil), false
	if m.index.sync(ctx) {
		schemas, ok = m.index.schemaList()
	}
	if ok {
		out.Tables = schemas
	} else {
		snap, err := m.readSnapshot(ctx)
		if err != nil {
			return nil, toStatus(ctx, err)
		}
		for _, s := range snap.tables {
			out.Tables = append(out.Tables, s)
		}
	}
	sort.Slice(out.Tables, func(i, j int) bool { return out.Tables[i].Name < out.Tables[j].Name })
	return out, nil
}

// DescribeTable returns a table's schema and tablets.
func (m *Master) DescribeTable(ctx context.Context, req *tabulapb.DescribeTableRequest) (*tabulapb.DescribeTableResponse, error) {
	schema, tablets, err := m.syncedTable(ctx, req.GetTable())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	out := &tabulapb.DescribeTableResponse{Schema: schema, Tablets: toProtos(tablets), SplitThresholdBytes: m.splitThresholdOf(schema)}
	m.addTabletLoads(out.Tablets)
	return out, nil
}

// ListTablets lists a table's tablets in key order.
func (m *Master) ListTablets(ctx context.Context, req *tabulapb.ListTabletsRequest) (*tabulapb.ListTabletsResponse, error) {
	_, tablets, err := m.syncedTable(ctx, req.GetTable())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	out := &tabulapb.ListTabletsResponse{Tablets: toProtos(tablets)}
	m.addTabletLoads(out.Tablets)
	return out, nil
}

// ListServers lists the live tablet servers with their tablet counts.
// The counts come from the tablet index when it is in sync, so that a
// status page, which asks on every view, reads the servers from etcd but
// not the whole tablet map; else from one snapshot of both.
func (m *Master) ListServers(ctx context.Context, _ *tabulapb.ListServersRequest) (*tabulapb.ListServersResponse, error) {
	snap, counts, ok := m.indexedServerCounts(ctx)
	if !ok {
		var err error
		if snap, err = m.readSnapshot(ctx); err != nil {
			return nil, toStatus(ctx, err)
		}
		counts = snap.counts()
	}
	out := &tabulapb.ListServersResponse{}
	for id, s := range snap.servers {
		out.Servers = append(out.Servers, &tabulapb.ServerInfo{Id: id, Address: s.Address, StartTimeMicros: s.StartTime, Tablets: int32(counts[id])})
	}
	sort.Slice(out.Servers, func(i, j int) bool { return out.Servers[i].Id < out.Servers[j].Id })
	m.addServerLoads(out.Servers)
	return out, nil
}

// indexedServerCounts reads the live servers from etcd and counts the
// tablets each holds in the tablet index, synced first to a revision read
// before the servers are: a tablet's owner may have registered after that
// revision, never before, which is the skew of two reads a status view
// can take. snap holds only the servers. ok is false when the index
// cannot answer.
func (m *Master) indexedServerCounts(ctx context.Context) (snap *snapshot, counts map[string]int, ok bool) {
	if !m.index.sync(ctx) {
		return nil, nil, false
	}
	srvs, err := meta.ListServers(ctx, m.cli, m.layout, func(key string, err error) {
		m.log.Warn("skipping server record", "key", key, "err", err)
	})
	if err != nil {
		return nil, nil, false
	}
	snap = &snapshot{servers: make(map[string]meta.ServerRecord, len(srvs))}
	counts = make(map[string]int, len(srvs))
	for _, r := range srvs {
		snap.servers[r.ID] = r
		counts[r.ID] = 0
	}
	ok = m.index.each(func(t *meta.VersionedTablet, _ *tabulapb.TableSchema) {
		if srv, owned := snap.owned(&t.TabletRecord); owned {
			counts[srv.ID]++
		}
	})
	return snap, counts, ok
}

// LocateTablet returns the tablet holding row (an empty row means the
// first tablet). A tablet that no live server holds yet answers
// UNAVAILABLE: retry shortly.
func (m *Master) LocateTablet(ctx context.Context, req *tabulapb.LocateTabletRequest) (*tabulapb.TabletInfo, error) {
	t, err := m.locate(ctx, req.GetTable(), req.GetRowKey())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return t.ToProto(), nil
}

func (m *Master) locate(ctx context.Context, table string, row []byte) (meta.TabletRecord, error) {
	if len(row) > cell.MaxRowKeyLen {
		return meta.TabletRecord{}, cell.Invalidf("row_key is %d bytes; the limit is %d", len(row), cell.MaxRowKeyLen)
	}
	if err := cell.ValidateTableName(table); err != nil {
		return meta.TabletRecord{}, err
	}
	if t := m.index.locate(table, row); t != nil {
		if t.Address != "" && t.State != meta.StateUnassigned {
			return t.TabletRecord, nil
		}
		// The index may lag the assignment: read just this tablet.
		cur, err := meta.GetTablet(ctx, m.cli, m.layout, table, t.ID)
		if err == nil && cur.Contains(row) {
			if cur.Address == "" || cur.State == meta.StateUnassigned {
				return meta.TabletRecord{}, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", cur.ID, table)
			}
			return cur.TabletRecord, nil
		}
	}
	// The index is not built, does not know the table yet or has no tablet
	// holding row (it lags): read etcd.
	_, tablets, err := m.tableAndTablets(ctx, table)
	if err != nil {
		return meta.TabletRecord{}, err
	}
	i := sort.Search(len(tablets), func(i int) bool { return bytes.Compare(tablets[i].Start, row) > 0 }) - 1
	if i < 0 || !tablets[i].Contains(row) {
		return meta.TabletRecord{}, notReadyf("no tablet of table %s holds row %q (the tablet map is changing); retry", table, row)
	}
	t := tablets[i]
	if t.Address == "" || t.State == meta.StateUnassigned {
		return meta.TabletRecord{}, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", t.ID, table)
	}
	return t.TabletRecord, nil
}

// LocateRange returns the tablets overlapping [start_key, end_key) in key
// order, at most limit of them. The answer stops before the first tablet
// that no server holds yet; if that is the first one, it is UNAVAILABLE.
func (m *Master) LocateRange(ctx context.Context, req *tabulapb.LocateRangeRequest) (*tabulapb.LocateRangeResponse, error) {
	start, end := req.GetStartKey(), req.GetEndKey()
	if len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return nil, toStatus(ctx, cell.Invalidf("start_key %q must be below end_key %q", start, end))
	}
	if req.GetLimit() < 0 {
		return nil, toStatus(ctx, cell.Invalidf("limit %d is negative; give 0 for all", req.GetLimit()))
	}
	if err := cell.ValidateTableName(req.GetTable()); err != nil {
		return nil, toStatus(ctx, err)
	}
	tablets, ok := m.index.overlapping(req.GetTable(), start, end, int(req.GetLimit()))
	if !ok || len(tablets) == 0 || tablets[0].Address == "" || tablets[0].State == meta.StateUnassigned {
		// Not built, table unknown, or lagging: read etcd.
		_, all, err := m.tableAndTablets(ctx, req.GetTable())
		if err != nil {
			return nil, toStatus(ctx, err)
		}
		tablets = make([]*meta.VersionedTablet, len(all))
		for i := range all {
			tablets[i] = &all[i]
		}
	}
	out := &tabulapb.LocateRangeResponse{}
	for _, t := range tablets {
		if !t.Overlaps(start, end) {
			continue
		}
		if t.Address == "" || t.State == meta.StateUnassigned {
			if len(out.Tablets) == 0 {
				return nil, toStatus(ctx, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", t.ID, t.Table))
			}
			break
		}
		out.Tablets = append(out.Tablets, t.ToProto())
		if req.GetLimit() > 0 && len(out.Tablets) >= int(req.GetLimit()) {
			break
		}
	}
	if len(out.Tablets) == 0 {
		return nil, toStatus(ctx, notReadyf("no tablet of table %s overlaps the range (the tablet map is changing); retry", req.GetTable()))
	}
	return out, nil
}

// tableAndTablets reads a table's schema and its tablets sorted by start
// key; NOT_FOUND if the table does not exist.
func (m *Master) tableAndTablets(ctx context.Context, table string) (*tabulapb.TableSchema, []meta.VersionedTablet, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return nil, nil, err
	}
	// One transaction, so schema and tablets come from one revision.
	rec, tablets, err := meta.GetTableAndTablets(ctx, m.cli, m.layout, table)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, nil, notFoundf("table %s does not exist", table)
	}
	if err != nil {
		return nil, nil, err
	}
	return rec.Schema, tablets, nil
}

// syncedTable is tableAndTablets served from the index once it has caught
// up with etcd (so a reader sees every completed write), else from etcd.
func (m *Master) syncedTable(ctx context.Context, table string) (*tabulapb.TableSchema, []*meta.VersionedTablet, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return nil, nil, err
	}
	if m.index.sync(ctx) {
		if schema, tablets, ok := m.index.table(table); ok {
			return schema, tablets, nil
		}
	}
	schema, all, err := m.tableAndTablets(ctx, table)
	if err != nil {
		return nil, nil, err
	}
	tablets := make([]*meta.VersionedTablet, len(all))
	for i := range all {
		tablets[i] = &all[i]
	}
	return schema, tablets, nil
}

func toProtos(ts []*meta.VersionedTablet) []*tabulapb.TabletInfo {
	out := make([]*tabulapb.TabletInfo, len(ts))
	for i := range ts {
		out[i] = ts[i].ToProto()
	}
	return out
}
