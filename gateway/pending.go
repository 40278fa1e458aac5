package gateway

import (
	"context"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"github.com/tabuladb/tabula/client"
)


func reversed() client.ReadOption { return nil }

func dropRows(ctx context.Context, s *Server, n tableName, req *btapb.DropRowRangeRequest) error {
	return unimplemented("DropRowRange", "not yet")
}

func extendedMutation(m *client.Mutation, pm *btpb.Mutation, path string) error {
	return unimplemented(path, "aggregates not yet")
}
