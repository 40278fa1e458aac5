package client

import (
	"context"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/locator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AdminClient manages tables and families and inspects the cluster. It
// talks to the masters only; calls a standby cannot answer wait (within
// the context and Options.RetryTimeout) for a leader. It is safe for
// concurrent use.
type AdminClient struct {
	c *Client
}

// TableInfo describes a table.
type TableInfo struct {
	Name     string
	Families []families.Family
	// SplitThreshold is the size in bytes past which a tablet splits; 0
	// means the cluster default.
	SplitThreshold int64
	// State is "enabled" or "deleting".
	State string
	// AutoMergeDisabled keeps the automatic merge away from the table's
	// tablets (docs/OPERATIONS.md "Merges").
	AutoMergeDisabled bool
	// Tablets are filled by DescribeTable only.
	Tablets []TabletInfo
}

// TabletInfo describes one tablet and where it is served.
type TabletInfo struct {
	ID string
	// Start and End bound the tablet: [Start, End); an empty End is the
	// end of the table.
	Start, End      []byte
	Server, Address string
	Epoch           int64
	// State is "unassigned", "assigned", "serving" or "splitting".
	State string
	// Table is the tablet's table.
	Table string
	// Load is from the leader's latest load report: zero when it has none
	// for the tablet (or a standby answered).
	Load TabletLoad
}

// TabletLoad is a tablet's size and load, as last reported to the leader.
type TabletLoad struct {
	SizeBytes                         int64
	SSTables                          int
	ReadsPerSec, WritesPerSec         float64
	ReadBytesPerSec, WriteBytesPerSec float64
}

// RequestsPerSec counts reads and writes.
func (l TabletLoad) RequestsPerSec() float64 { return l.ReadsPerSec + l.WritesPerSec }

// ServerInfo describes a live tablet server.
type ServerInfo struct {
	ID, Address string
	// StartTime is when the server started, in microseconds since the epoch.
	StartTime int64
	Tablets   int
	// Sums over its tablets from the leader's latest load report (zero
	// when a standby answered or the server did not report).
	SizeBytes                 int64
	SSTables                  int
	ReadsPerSec, WritesPerSec float64
	// BusyShare is the seconds spent serving per second, summed over
	// concurrent requests.
	BusyShare float64
}

// call runs fn on a master, retrying with backoff while none answers
// other than UNAVAILABLE (no leader elected yet, say).
func (a *AdminClient) call(ctx context.Context, fn func(context.Context, tabulapb.MasterClient) error) error {
	r := a.c.newRetrier()
	for {
		err := a.c.loc.CallMaster(ctx, fn)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return contextStatus(ctx, err)
		}
		if !locator.IsUnavailable(err) {
			return err
		}
		if werr := r.wait(ctx, err); werr != nil {
			return werr
		}
	}
}

// CreateTable creates table name with the given families, pre-split at
// splitKeys (len(splitKeys)+1 tablets).
func (a *AdminClient) CreateTable(ctx context.Context, name string, fams []families.Family, splitKeys [][]byte) error {
	return a.CreateTableWithInfo(ctx, TableInfo{Name: name, Families: fams}, splitKeys)
}

// CreateTableWithInfo creates a table from info's Name, Families and
// SplitThreshold, pre-split at splitKeys.
func (a *AdminClient) CreateTableWithInfo(ctx context.Context, info TableInfo, splitKeys [][]byte) error {
	if err := cell.ValidateTableName(info.Name); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	for i := range info.Families {
		if err := info.Families[i].Validate(); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
	req := &tabulapb.CreateTableRequest{
		Schema: &tabulapb.TableSchema{Name: info.Name, Families: convert.FamiliesToProto(info.Families),
			SplitThresholdBytes: info.SplitThreshold, AutoMergeDisabled: info.AutoMergeDisabled},
		SplitKeys: splitKeys,
	}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.CreateTable(ctx, req)
		return err
	})
}

// DeleteTable deletes a table and its data.
func (a *AdminClient) DeleteTable(ctx context.Context, name string) error {
	defer a.c.loc.EvictTable(name)
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: name})
		return err
	})
}

// ListTables lists every table (without tablets).
func (a *AdminClient) ListTables(ctx context.Context) ([]TableInfo, error) {
	var resp *tabulapb.ListTablesResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListTables(ctx, &tabulapb.ListTablesRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]TableInfo, 0, len(resp.GetTables()))
	for _, s := range resp.GetTables() {
		ti, err := tableInfo(s)
		if err != nil {
			return nil, err
		}
		out = append(out, ti)
	}
	return out, nil
}

// DescribeTable returns a table's schema and tablets.
func (a *AdminClient) DescribeTable(ctx context.Context, name string) (TableInfo, error) {
	var resp *tabulapb.DescribeTableResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: name})
		return err
	})
	if err != nil {
		return TableInfo{}, err
	}
	ti, err := tableInfo(resp.GetSchema())
	if err != nil {
		return TableInfo{}, err
	}
	ti.Tablets = tabletInfos(resp.GetTablets())
	return ti, nil
}

func tableInfo(s *tabulapb.TableSchema) (TableInfo, error) {
	fams, err := convert.FamiliesFromProto(s.GetFamilies())
	if err != nil {
		return TableInfo{}, status.Errorf(codes.Internal, "client: master sent a bad schema for %s: %v", s.GetName(), err)
	}
	return TableInfo{Name: s.GetName(), Families: fams, SplitThreshold: s.GetSplitThresholdBytes(), State: s.GetState(),
		AutoMergeDisabled: s.GetAutoMergeDisabled()}, nil
}

func tabletInfos(ps []*tabulapb.TabletInfo) []TabletInfo {
	out := make([]TabletInfo, len(ps))
	for i, p := range ps {
		out[i] = TabletInfo{ID: p.GetTabletId(), Start: p.GetStartKey(), End: p.GetEndKey(), Server: p.GetServerId(),
			Address: p.GetServerAddress(), Epoch: p.GetEpoch(), State: p.GetState(), Table: p.GetTable(),
			Load: TabletLoad{
				SizeBytes: p.GetSizeBytes(), SSTables: int(p.GetSstables()),
				ReadsPerSec: p.GetReadsPerSec(), WritesPerSec: p.GetWritesPerSec(),
				ReadBytesPerSec: p.GetReadBytesPerSec(), WriteBytesPerSec: p.GetWriteBytesPerSec(),
			}}
	}
	return out
}

// AddFamily adds family f to table.
func (a *AdminClient) AddFamily(ctx context.Context, table string, f families.Family) error {
	return a.familyCall(ctx, table, f, tabulapb.MasterClient.AddFamily)
}

// ModifyFamily replaces the settings of table's family f.Name with f's.
func (a *AdminClient) ModifyFamily(ctx context.Context, table string, f families.Family) error {
	return a.familyCall(ctx, table, f, tabulapb.MasterClient.ModifyFamily)
}

type familyRPC = func(tabulapb.MasterClient, context.Context, *tabulapb.FamilyRequest, ...grpc.CallOption) (*tabulapb.TableSchema, error)

func (a *AdminClient) familyCall(ctx context.Context, table string, f families.Family, rpc familyRPC) error {
	if err := f.Validate(); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	req := &tabulapb.FamilyRequest{Table: table, Family: convert.FamilyToProto(f)}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := rpc(m, ctx, req)
		return err
	})
}

// DeleteFamily deletes table's family name and its data.
func (a *AdminClient) DeleteFamily(ctx context.Context, table, name string) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: table, Family: name})
		return err
	})
}

// Tablets lists table's tablets in key order.
func (a *AdminClient) Tablets(ctx context.Context, table string) ([]TabletInfo, error) {
	var resp *tabulapb.ListTabletsResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListTablets(ctx, &tabulapb.ListTabletsRequest{Table: table})
		return err
	})
	if err != nil {
		return nil, err
	}
	return tabletInfos(resp.GetTablets()), nil
}

// Servers lists the live tablet servers.
func (a *AdminClient) Servers(ctx context.Context) ([]ServerInfo, error) {
	var resp *tabulapb.ListServersResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]ServerInfo, len(resp.GetServers()))
	for i, s := range resp.GetServers() {
		out[i] = ServerInfo{ID: s.GetId(), Address: s.GetAddress(), StartTime: s.GetStartTimeMicros(), Tablets: int(s.GetTablets()),
			SizeBytes: s.GetSizeBytes(), SSTables: int(s.GetSstables()),
			ReadsPerSec: s.GetReadsPerSec(), WritesPerSec: s.GetWritesPerSec(), BusyShare: s.GetBusyShare()}
	}
	return out, nil
}

// SplitTablet splits the tablet of table holding row at row, and returns
// once the children serve.
func (a *AdminClient) SplitTablet(ctx context.Context, table string, row []byte) error {
	if err := cell.ValidateRow(row); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	var resp *tabulapb.SplitTabletResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: table, RowKey: row})
		return err
	})
	if err != nil {
		return err
	}
	for _, p := range resp.GetTablets() {
		t := locator.TabletFromProto(p)
		if t.Table == "" {
			t.Table = table
		}
		a.c.loc.Insert(t)
	}
	return nil
}

// CompactTable compacts every tablet of table; major first flushes each
// tablet's memtable, then rewrites each family into one file, dropping
// deleted and condemned cells.
func (a *AdminClient) CompactTable(ctx context.Context, table string, major bool) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.CompactTable(ctx, &tabulapb.CompactTableRequest{Table: table, Major: major})
		return err
	})
}

// DropRowRange deletes every row of table whose key starts with prefix
// (not empty): each cell written before the call is gone once it returns,
// also after crashes, splits and moves; writes made after it returns stay.
// Writes racing with it may survive or not, each row whole. The tablets
// drop whole SSTables rather than deleting cell by cell, so it is fast
// whatever the rows hold. It is an admin call (the Admin role on the
// table) and cannot be undone.
//
// An UNAVAILABLE answer (some tablet could not be reached in time) is
// retried like other admin calls; if it is returned, part of the range may
// have been dropped: calling again is safe.
func (a *AdminClient) DropRowRange(ctx context.Context, table string, prefix []byte) error {
	if len(prefix) == 0 {
		return status.Error(codes.InvalidArgument, "DropRowRange: the prefix is empty; to drop every row call DropAllRows")
	}
	return a.dropRows(ctx, &tabulapb.DropRowRangeRequest{Table: table, Target: &tabulapb.DropRowRangeRequest_RowKeyPrefix{RowKeyPrefix: prefix}})
}

// DropAllRows deletes every row of table, keeping the table and its
// families, as DropRowRange does for a prefix.
func (a *AdminClient) DropAllRows(ctx context.Context, table string) error {
	return a.dropRows(ctx, &tabulapb.DropRowRangeRequest{Table: table, Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{DeleteAllDataFromTable: true}})
}

func (a *AdminClient) dropRows(ctx context.Context, req *tabulapb.DropRowRangeRequest) error {
	if err := cell.ValidateTableName(req.GetTable()); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DropRowRange(ctx, req)
		return err
	})
}

// Balance asks the master to even out tablets across servers and returns
// how many it moved.
func (a *AdminClient) Balance(ctx context.Context) (int, error) {
	var resp *tabulapb.BalanceResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.Balance(ctx, &tabulapb.BalanceRequest{})
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(resp.GetMoved()), nil
}
