package master

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/eventlog"
)

// What the status page and the CLI's load views read (docs/OPERATIONS.md
// "Status page"): this master's own events, who leads, and the leader's
// latest load report through TopTablets and the load columns of
// ListServers and ListTablets. A standby collects no load: its answers
// carry zero load, and TopTablets on a standby answers NotLeader so that
// clients ask the leader.

// Events returns this master's recent events (leader changes, tablet
// assignments and reassignments, moves...), oldest first.
func (m *Master) Events() []eventlog.Event { return m.events.Since(time.Time{}) }

// Leader returns the leader's advertised address ("" while none is
// elected or etcd does not answer).
func (m *Master) Leader(ctx context.Context) string {
	if m.IsLeader() {
		return m.opts.AdvertiseAddr
	}
	return m.leaderAddr(ctx)
}

// defaultTopTablets is TopTablets' limit when the request gives none.
const defaultTopTablets = 20

// TopTablets answers the hottest tablets of the latest load report.
func (m *Master) TopTablets(ctx context.Context, req *tabulapb.TopTabletsRequest) (*tabulapb.TopTabletsResponse, error) {
	if _, err := m.lead(ctx); err != nil {
		return nil, toStatus(ctx, err)
	}
	key, err := topKey(req.GetBy())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	limit := int(req.GetLimit())
	if limit <= 0 {
		limit = defaultTopTablets
	}
	rep := m.Loads()
	out := &tabulapb.TopTabletsResponse{}
	if rep == nil {
		return out, nil
	}
	out.ReportTimeMicros = rep.At.UnixMicro()
	for _, id := range slices.Sorted(maps.Keys(rep.Servers)) {
		if e := rep.Servers[id].Err; e != "" {
			out.MissingServers = append(out.MissingServers, id+": "+e)
		}
	}
	ts := make([]*TabletLoad, 0, len(rep.Tablets))
	for _, t := range rep.Tablets {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b *TabletLoad) int {
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		return cmp.Compare(tabletKey(a.Table, a.ID), tabletKey(b.Table, b.ID))
	})
	for _, t := range ts[:min(limit, len(ts))] {
		info := &tabulapb.TabletInfo{Table: t.Table, TabletId: t.ID, StartKey: t.Start, EndKey: t.End, ServerId: t.Server}
		if s, ok := rep.Servers[t.Server]; ok {
			info.ServerAddress = s.Address
		}
		fillTabletLoad(info, t)
		out.Tablets = append(out.Tablets, info)
	}
	return out, nil
}

// topKey is what TopTablets sorts by.
func topKey(by string) (func(*TabletLoad) float64, error) {
	switch by {
	case "", "requests":
		return (*TabletLoad).RequestsPerSec, nil
	case "size":
		return func(t *TabletLoad) float64 { return float64(t.SizeBytes) }, nil
	case "bytes":
		return func(t *TabletLoad) float64 { return t.ReadBytesPerSec + t.WriteBytesPerSec }, nil
	}
	return nil, cell.Invalidf("top tablets by %q: give requests, size or bytes", by)
}

func fillTabletLoad(info *tabulapb.TabletInfo, t *TabletLoad) {
	info.SizeBytes = t.SizeBytes
	info.Sstables = t.SSTables
	info.ReadsPerSec, info.WritesPerSec = t.ReadsPerSec, t.WritesPerSec
	info.ReadBytesPerSec, info.WriteBytesPerSec = t.ReadBytesPerSec, t.WriteBytesPerSec
}

// addTabletLoads fills the load columns of tablets from the latest report
// (nothing on a standby, which has none).
func (m *Master) addTabletLoads(tablets []*tabulapb.TabletInfo) {
	rep := m.Loads()
	if rep == nil || !m.IsLeader() {
		return
	}
	for _, info := range tablets {
		if t, ok := rep.Tablet(info.GetTable(), info.GetTabletId()); ok {
			fillTabletLoad(info, t)
		}
	}
}

// addServerLoads fills the load columns of servers from the latest report.
func (m *Master) addServerLoads(servers []*tabulapb.ServerInfo) {
	rep := m.Loads()
	if rep == nil || !m.IsLeader() {
		return
	}
	for _, info := range servers {
		if s, ok := rep.Servers[info.GetId()]; ok {
			info.SizeBytes = s.SizeBytes
			info.ReadsPerSec, info.WritesPerSec = s.ReadsPerSec, s.WritesPerSec
			info.BusyShare = s.BusyShare
			info.Sstables = int32(s.SSTables)
		}
	}
}
