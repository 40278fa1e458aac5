package client

import (
	"bytes"
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
)

// MergeTablets merges the tablets of table overlapping [start, end) (an
// empty end is the end of the table) into one tablet, without copying
// data, and returns it with the number of pairwise merges done (0 when one
// tablet covered the range already). It may merge across the table's
// user split keys (its CreateTable split keys and SplitTablet rows), which
// the automatic merge keeps (docs/OPERATIONS.md "Merges").
func (a *AdminClient) MergeTablets(ctx context.Context, table string, start, end []byte) (TabletInfo, int, error) {
	table = cell.CanonicalTableName(table) // "default:T" is T
	if err := cell.ValidateTableName(table); err != nil {
		return TabletInfo{}, 0, status.Error(codes.InvalidArgument, err.Error())
	}
	if len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return TabletInfo{}, 0, invalid("MergeTablets: start %q is not before end %q", start, end)
	}
	var resp *tabulapb.MergeTabletsResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: table, StartKey: start, EndKey: end})
		return err
	})
	if err != nil {
		return TabletInfo{}, 0, err
	}
	t := locator.TabletFromProto(resp.GetTablet())
	if t.Table == "" {
		t.Table = table
	}
	a.c.loc.Insert(t) // replaces the cached parents it overlaps
	return tabletInfos([]*tabulapb.TabletInfo{resp.GetTablet()})[0], int(resp.GetMerges()), nil
}
