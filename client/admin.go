package client

import (
	"context"
	"time"

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
	// BalancerDisabled keeps the automatic balancer away from the table's
	// tablets (docs/OPERATIONS.md "Balancing"); read-only here: switch it
	// with SetBalancer.
	BalancerDisabled bool
	// UserSplitKeys are the tablet boundaries users asked for (create
	// splits, SplitTablet rows), which the automatic merge keeps; read-only.
	UserSplitKeys [][]byte
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
		AutoMergeDisabled: s.GetAutoMergeDisabled(), BalancerDisabled: s.GetBalancerDisabled(), UserSplitKeys: s.GetUserSplitKeys()}, nil
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

// Balance asks the master to run one balancing round now (the automatic
// balancer runs them on its own; docs/OPERATIONS.md "Balancing") and
// returns how many tablets it moved.
func (a *AdminClient) Balance(ctx context.Context) (int, error) {
	moved, _, err := a.BalancePlan(ctx, false)
	return moved, err
}

// PlannedMove is one move of a tablet the balancer planned or made.
type PlannedMove struct {
	Table, TabletID, From, To string
	// Reason says why: the servers' costs, or "operator".
	Reason string
}

// BalancePlan runs one balancing round, or with dryRun only plans it; it
// returns how many moves succeeded and the moves planned.
func (a *AdminClient) BalancePlan(ctx context.Context, dryRun bool) (int, []PlannedMove, error) {
	var resp *tabulapb.BalanceResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.Balance(ctx, &tabulapb.BalanceRequest{DryRun: dryRun})
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	var moves []PlannedMove
	for _, mv := range resp.GetMoves() {
		moves = append(moves, plannedMove(mv))
	}
	return int(resp.GetMoved()), moves, nil
}

func plannedMove(mv *tabulapb.PlannedMove) PlannedMove {
	return PlannedMove{Table: mv.GetTable(), TabletID: mv.GetTabletId(), From: mv.GetFromServer(), To: mv.GetToServer(), Reason: mv.GetReason()}
}

// MoveTablet moves one tablet of table to the live tablet server
// serverID now (whatever the balancer's switches say) and returns its new
// assignment.
func (a *AdminClient) MoveTablet(ctx context.Context, table, tabletID, serverID string) (TabletInfo, error) {
	var resp *tabulapb.MoveTabletResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.MoveTablet(ctx, &tabulapb.MoveTabletRequest{Table: table, TabletId: tabletID, ServerId: serverID})
		return err
	})
	if err != nil {
		return TabletInfo{}, err
	}
	return tabletInfos([]*tabulapb.TabletInfo{resp.GetTablet()})[0], nil
}

// SetBalancer switches the automatic balancer on or off: the cluster's
// switch when table is "", else that table's.
func (a *AdminClient) SetBalancer(ctx context.Context, table string, on bool) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Table: table, Enabled: on})
		return err
	})
}

// SetAutoMerge switches the automatic merge of small, cold adjacent
// tablets on or off for table (docs/OPERATIONS.md "Merges").
func (a *AdminClient) SetAutoMerge(ctx context.Context, table string, on bool) error {
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.SetAutoMerge(ctx, &tabulapb.SetAutoMergeRequest{Table: table, Enabled: on})
		return err
	})
}

// BalancerStatus is the balancer's switches and recent work.
type BalancerStatus struct {
	// Enabled is the cluster switch; DisabledTables the tables switched off.
	Enabled        bool
	DisabledTables []string
	// Interval between rounds (0: the leader's loop is off by configuration).
	Interval time.Duration
	// LastRound is when the leader last ran a round (zero: not yet);
	// MovesMade counts the leader's moves since it was elected.
	LastRound time.Time
	MovesMade int64
	// RecentMoves are the last moves, oldest first.
	RecentMoves []BalancerMove
}

// BalancerMove is a move made, and when.
type BalancerMove struct {
	PlannedMove
	At time.Time
}

// Balancer returns the balancer's status.
func (a *AdminClient) Balancer(ctx context.Context) (BalancerStatus, error) {
	var resp *tabulapb.GetBalancerResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.GetBalancer(ctx, &tabulapb.GetBalancerRequest{})
		return err
	})
	if err != nil {
		return BalancerStatus{}, err
	}
	st := BalancerStatus{
		Enabled: resp.GetEnabled(), DisabledTables: resp.GetDisabledTables(),
		Interval: time.Duration(resp.GetIntervalMillis()) * time.Millisecond, MovesMade: resp.GetMovesMade(),
	}
	if us := resp.GetLastRoundMicros(); us != 0 {
		st.LastRound = time.UnixMicro(us)
	}
	for _, mv := range resp.GetRecentMoves() {
		st.RecentMoves = append(st.RecentMoves, BalancerMove{PlannedMove: plannedMove(mv.GetMove()), At: time.UnixMicro(mv.GetAtMicros())})
	}
	return st, nil
}
