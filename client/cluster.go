package client

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file holds the AdminClient's ClusterAdmin methods (merge.go and
// top.go hold MergeTablets and TopTablets).

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

// Tablets lists table's tablets in key order.
func (a *AdminClient) Tablets(ctx context.Context, table string) ([]TabletInfo, error) {
	table = cell.CanonicalTableName(table) // "default:T" is T
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
	table = cell.CanonicalTableName(table) // "default:T" is T
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

// SplitTabletMidpoint splits one tablet of table at its size midpoint
// (the row its server picks from its SSTable indexes, flushing first when
// they hold nothing): the tablet with id tabletID, else the one holding
// row, else the table's only tablet (INVALID_ARGUMENT when it has
// several). It returns the two children once they serve.
// FAILED_PRECONDITION "no split key" means the tablet holds too little
// (one row, say) to be cut in two.
func (a *AdminClient) SplitTabletMidpoint(ctx context.Context, table, tabletID string, row []byte) ([]TabletInfo, error) {
	table = cell.CanonicalTableName(table) // "default:T" is T
	if len(row) > 0 {
		if err := cell.ValidateRow(row); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
	}
	var resp *tabulapb.SplitTabletResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: table, TabletId: tabletID, RowKey: row, Midpoint: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, p := range resp.GetTablets() {
		t := locator.TabletFromProto(p)
		if t.Table == "" {
			t.Table = table
		}
		a.c.loc.Insert(t)
	}
	return tabletInfos(resp.GetTablets()), nil
}

// FlushTable writes the memtable of every tablet of table to SSTables
// (what a restart would otherwise replay from the commit log).
func (a *AdminClient) FlushTable(ctx context.Context, table string) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.FlushTable(ctx, &tabulapb.FlushTableRequest{Table: table})
		return err
	})
}

// CompactTable compacts every tablet of table; major first flushes each
// tablet's memtable, then rewrites each family into one file, dropping
// deleted and condemned cells.
func (a *AdminClient) CompactTable(ctx context.Context, table string, major bool) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.CompactTable(ctx, &tabulapb.CompactTableRequest{Table: table, Major: major})
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
	table = cell.CanonicalTableName(table) // "default:T" is T
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
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.SetBalancer(ctx, &tabulapb.SetBalancerRequest{Table: table, Enabled: on})
		return err
	})
}

// SetAutoMerge switches the automatic merge of small, cold adjacent
// tablets on or off for table (docs/OPERATIONS.md "Merges").
func (a *AdminClient) SetAutoMerge(ctx context.Context, table string, on bool) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
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
