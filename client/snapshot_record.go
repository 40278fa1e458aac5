package client

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// SnapshotRecord returns the whole record of the snapshot name: its
// schema and its tablets with their ids and ranges, which a backup reads
// the snapshot's holds by (backup; docs/OPERATIONS.md "Backups"). A
// missing snapshot is NOT_FOUND. It needs read on the snapshot's table.
func (a *AdminClient) SnapshotRecord(ctx context.Context, name string) (*tabulapb.Snapshot, error) {
	var resp *tabulapb.ListSnapshotsResponse
	err := a.callSnapshots(ctx, func(ctx context.Context, c tabulapb.SnapshotsClient) (err error) {
		resp, err = c.ListSnapshots(ctx, &tabulapb.ListSnapshotsRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, s := range resp.GetSnapshots() {
		if s.GetName() == name {
			return s, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist", name)
}
