package gateway

import (
	"context"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
)

// dropRows deletes the rows of a prefix, or all rows, through the master,
// which drops whole files and tablets' data without reading them.
func dropRows(ctx context.Context, s *Server, n tableName, req *btapb.DropRowRangeRequest) error {
	admin := s.c.Admin()
	switch t := req.GetTarget().(type) {
	case *btapb.DropRowRangeRequest_RowKeyPrefix:
		if len(t.RowKeyPrefix) == 0 {
			return invalidf("row_key_prefix must not be empty; to drop every row set delete_all_data_from_table")
		}
		return toStatus(admin.DropRowRange(ctx, n.table, t.RowKeyPrefix))
	case *btapb.DropRowRangeRequest_DeleteAllDataFromTable:
		if !t.DeleteAllDataFromTable {
			return invalidf("delete_all_data_from_table must be true if set")
		}
		return toStatus(admin.DropAllRows(ctx, n.table))
	}
	return invalidf("set row_key_prefix or delete_all_data_from_table")
}
