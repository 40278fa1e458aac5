package master

import (
	"bytes"
	"context"
	"sort"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// SplitTablet splits the tablet holding row at row. The tablet's server
// does the work and commits the new map (meta.CommitSplit); the answer is
// its two children. Splitting at an existing boundary changes nothing and
// answers the two tablets that meet there.
func (m *Master) SplitTablet(ctx context.Context, req *tabulapb.SplitTabletRequest) (*tabulapb.SplitTabletResponse, error) {
	resp, err := m.splitTablet(ctx, req.GetTable(), req.GetRowKey())
	if err == nil {
		m.noteUserSplit(ctx, req.GetTable(), req.GetRowKey()) // the automatic merge keeps this boundary
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
	i := sort.Search(len(tablets), func(i int) bool { return bytes.Compare(tablets[i].Start, row) > 0 }) - 1
	if i < 0 || !tablets[i].Contains(row) {
		return nil, notReadyf("no tablet of table %s holds row %q (the tablet map is changing); retry", table, row)
	}
	t := tablets[i]
	if bytes.Equal(t.Start, row) && i > 0 {
		return &tabulapb.SplitTabletResponse{Tablets: []*tabulapb.TabletInfo{tablets[i-1].ToProto(), t.ToProto()}}, nil
	}
	if t.Address == "" || t.State == meta.StateUnassigned {
		return nil, notReadyf("tablet %s of table %s is not assigned to a server yet; retry", t.ID, table)
	}
	var resp *tabulapb.SplitTabletResponse
	err = m.callServer(ctx, t.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
		var err error
		resp, err = c.SplitTablet(ctx, &tabulapb.SplitRequest{Tablet: ref(&t.TabletRecord), RowKey: row})
		return err
	})
	if err != nil {
		return nil, err
	}
	m.log.Info("split tablet", "table", table, "tablet", t.ID, "row", string(row))
	return resp, nil
}

// CompactTable asks the server of every tablet of the table to compact it.
func (m *Master) CompactTable(ctx context.Context, req *tabulapb.CompactTableRequest) (*tabulapb.CompactTableResponse, error) {
	return &tabulapb.CompactTableResponse{}, toStatus(ctx, m.compactTable(ctx, req.GetTable(), req.GetMajor()))
}

func (m *Master) compactTable(ctx context.Context, table string, major bool) error {
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
			_, err := c.CompactTablet(ctx, &tabulapb.CompactTabletRequest{Tablet: ref(&t.TabletRecord), Major: major})
			return err
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
