package master

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// SplitTablet splits the tablet holding row at row, or with midpoint a
// tablet (named by id, by a row inside it, or the table's only one) at
// the row its server picks as its size midpoint. The tablet's server does
// the work and commits the new map (meta.CommitSplit); the answer is its
// two children. Splitting at an existing boundary changes nothing and
// answers the two tablets that meet there.
func (m *Master) SplitTablet(ctx context.Context, req *tabulapb.SplitTabletRequest) (*tabulapb.SplitTabletResponse, error) {
	var resp *tabulapb.SplitTabletResponse
	var err error
	if req.GetMidpoint() {
		resp, err = m.splitMidpoint(ctx, req.GetTable(), req.GetTabletId(), req.GetRowKey())
	} else {
		resp, err = m.splitTablet(ctx, req.GetTable(), req.GetRowKey())
	}
	if err == nil {
		// The automatic merge keeps this boundary: the user asked for it.
		if ts := resp.GetTablets(); len(ts) == 2 {
			m.noteUserSplit(ctx, req.GetTable(), ts[1].GetStartKey())
		}
	}
	return resp, toStatus(ctx, err)
}

func (m *Master) splitTablet(ctx context.Context, table string, row []byte) (*tabulapb.SplitTabletResponse, error) {
	if err := cell.ValidateRow(row); err != nil {
		return nil, cell.Invalidf("row_key: %v", err)
	}
	if _, err := m.lead(ctx); err != nil {
		return nil, err
	}
	_, tablets, err := m.tableAndTablets(ctx, table)
	if err != nil {
		return nil, err
	}
	i, err := tabletHolding(table, tablets, row)
	if err != nil {
		return nil, err
	}
	t := tablets[i]
	if bytes.Equal(t.Start, row) && i > 0 {
		return &tabulapb.SplitTabletResponse{Tablets: []*tabulapb.TabletInfo{tablets[i-1].ToProto(), t.ToProto()}}, nil
	}
	return m.splitOn(ctx, t, row)
}

// splitMidpoint splits one tablet of table at its size midpoint: the
// tablet with id tabletID, else the one holding row, else the only one.
func (m *Master) splitMidpoint(ctx context.Context, table, tabletID string, row []byte) (*tabulapb.SplitTabletResponse, error) {
	if _, err := m.lead(ctx); err != nil {
		return nil, err
	}
	_, tablets, err := m.tableAndTablets(ctx, table)
	if err != nil {
		return nil, err
	}
	i := -1
	switch {
	case tabletID != "":
		for j := range tablets {
			if tablets[j].ID == tabletID {
				i = j
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("table %s has no tablet %s (it may have split or merged since it was listed; list them again): %w", table, tabletID, ErrNotFound)
		}
	case len(row) > 0:
		if i, err = tabletHolding(table, tablets, row); err != nil {
			return nil, err
		}
	case len(tablets) == 1:
		i = 0
	default:
		return nil, cell.Invalidf("table %s has %d tablets; name the one to split at its midpoint by tablet_id or by a row_key inside it", table, len(tablets))
	}
	return m.splitOn(ctx, tablets[i], nil)
}

// tabletHolding returns the index of the tablet holding row.
func tabletHolding(table string, tablets []meta.VersionedTablet, row []byte) (int, error) {
	i := sort.Search(len(tablets), func(i int) bool { return bytes.Compare(tablets[i].Start, row) > 0 }) - 1
	if i < 0 || !tablets[i].Contains(row) {
		return 0, notReadyf("no tablet of table %s holds row %q (the tablet map is changing); retry", table, row)
	}
	return i, nil
}

// splitOn asks t's server to split it at row (empty: at its SplitKey).
func (m *Master) splitOn(ctx context.Context, t meta.VersionedTablet, row []byte) (*tabulapb.SplitTabletResponse, error) {
	if t.Address == "" || t.State == meta.StateUnassigned {
		return nil, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", t.ID, t.Table)
	}
	var resp *tabulapb.SplitTabletResponse
	err := m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
		var err error
		resp, err = c.SplitTablet(ctx, &tabulapb.SplitRequest{Tablet: ref(&t.TabletRecord), RowKey: row})
		return err
	})
	if err != nil {
		return nil, err
	}
	at := row
	if ts := resp.GetTablets(); len(ts) == 2 {
		at = ts[1].GetStartKey()
	}
	m.log.Info("split tablet", "table", t.Table, "tablet", t.ID, "row", string(at), "midpoint", len(row) == 0)
	return resp, nil
}

// CompactTable asks the server of every tablet of the table to compact it.
func (m *Master) CompactTable(ctx context.Context, req *tabulapb.CompactTableRequest) (*tabulapb.CompactTableResponse, error) {
	return &tabulapb.CompactTableResponse{}, toStatus(ctx, m.compactTable(ctx, req.GetTable(), req.GetMajor()))
}

func (m *Master) compactTable(ctx context.Context, table string, major bool) error {
	return m.eachTablet(ctx, table, func(ctx context.Context, t meta.VersionedTablet, c tabulapb.TabletServerClient) error {
		_, err := c.CompactTablet(ctx, &tabulapb.CompactTabletRequest{Tablet: ref(&t.TabletRecord), Major: major})
		return err
	})
}

// eachTablet calls call on the server of every tablet of table, one after
// the other, and returns the first error (its status code kept) after
// trying them all.
func (m *Master) eachTablet(ctx context.Context, table string, call func(context.Context, meta.VersionedTablet, tabulapb.TabletServerClient) error) error {
	if _, err := m.lead(ctx); err != nil {
		return err
	}
	_, tablets, err := m.tableAndTablets(ctx, table)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tablets {
		if t.Address == "" || t.State == meta.StateUnassigned {
			errs = append(errs, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", t.ID, table))
			continue
		}
		err := m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
			return call(ctx, t, c)
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0] // keeps the first error's status code
	}
	return nil
}

// FlushTable asks the server of every tablet of the table to flush its
// memtable to SSTables, as CompactTable asks them to compact.
func (m *Master) FlushTable(ctx context.Context, req *tabulapb.FlushTableRequest) (*tabulapb.FlushTableResponse, error) {
	return &tabulapb.FlushTableResponse{}, toStatus(ctx, m.flushTable(ctx, req.GetTable()))
}

func (m *Master) flushTable(ctx context.Context, table string) error {
	return m.eachTablet(ctx, table, func(ctx context.Context, t meta.VersionedTablet, c tabulapb.TabletServerClient) error {
		_, err := c.FlushTablet(ctx, ref(&t.TabletRecord))
		return err
	})
}

// move unloads t from its server and assigns it to to at epoch+1. If the
// unload fails the tablet stays where it is. The move is logged at info
// with "event" "move" (collected by the status page) and attrs (the
// reason, costs).
func (m *Master) move(ctx context.Context, term *leadership, t meta.VersionedTablet, to meta.ServerRecord, attrs ...any) error {
	if err := m.unloadFrom(ctx, &t.TabletRecord); err != nil {
		return err
	}
	next, err := meta.Assign(ctx, m.cli, m.layout, t, to, term.guard())
	if err != nil {
		// The old server no longer holds it: make the loop load it again.
		term.assign.unconfirm(m.layout.TabletKey(t.Table, t.ID))
		return err
	}
	m.counters.moves.Add(1)
	m.log.Info("moved tablet", append([]any{"event", "move", "table", t.Table, "tablet", t.ID, "from", t.Server, "to", to.ID, "epoch", next.Epoch}, attrs...)...)
	return nil
}

func ref(t *meta.TabletRecord) *tabulapb.TabletRef {
	return &tabulapb.TabletRef{Table: t.Table, TabletId: t.ID, Epoch: t.Epoch}
}
