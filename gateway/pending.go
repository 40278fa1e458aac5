package gateway

import (
	"context"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
)

func dropRows(ctx context.Context, s *Server, n tableName, req *btapb.DropRowRangeRequest) error {
	return unimplemented("DropRowRange", "not yet")
}
