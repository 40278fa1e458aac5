package gateway

import (
	"context"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
)

// dataServer serves google.bigtable.v2.Bigtable.
type dataServer struct {
	btpb.UnimplementedBigtableServer
	s *Server
}

// PingAndWarm checks the instance name and that the cluster answers.
func (d *dataServer) PingAndWarm(ctx context.Context, req *btpb.PingAndWarmRequest) (*btpb.PingAndWarmResponse, error) {
	if _, err := parseInstance("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := d.s.ping(ctx); err != nil {
		return nil, err
	}
	return &btpb.PingAndWarmResponse{}, nil
}

// viewsUnsupported refuses requests through authorized or materialized
// views, which Tabula does not have.
func viewsUnsupported(authorized, materialized string) error {
	switch {
	case authorized != "":
		return unimplemented("authorized views", "read and write the table itself (table_name)")
	case materialized != "":
		return unimplemented("materialized views", "read the table itself (table_name)")
	}
	return nil
}

func (d *dataServer) GenerateInitialChangeStreamPartitions(*btpb.GenerateInitialChangeStreamPartitionsRequest, btpb.Bigtable_GenerateInitialChangeStreamPartitionsServer) error {
	return unimplemented("GenerateInitialChangeStreamPartitions", "Tabula has no change streams")
}

func (d *dataServer) ReadChangeStream(*btpb.ReadChangeStreamRequest, btpb.Bigtable_ReadChangeStreamServer) error {
	return unimplemented("ReadChangeStream", "Tabula has no change streams")
}

func (d *dataServer) PrepareQuery(context.Context, *btpb.PrepareQueryRequest) (*btpb.PrepareQueryResponse, error) {
	return nil, unimplemented("PrepareQuery", "Tabula has no SQL; use ReadRows with filters")
}

func (d *dataServer) ExecuteQuery(*btpb.ExecuteQueryRequest, btpb.Bigtable_ExecuteQueryServer) error {
	return unimplemented("ExecuteQuery", "Tabula has no SQL; use ReadRows with filters")
}

func (d *dataServer) GetClientConfiguration(context.Context, *btpb.GetClientConfigurationRequest) (*btpb.ClientConfiguration, error) {
	return nil, unimplemented("GetClientConfiguration", "clients use their default configuration against the gateway")
}

func (d *dataServer) OpenTable(btpb.Bigtable_OpenTableServer) error {
	return unimplemented("OpenTable (sessions)", "use the classic data RPCs (ReadRows, MutateRow, ...)")
}

func (d *dataServer) OpenAuthorizedView(btpb.Bigtable_OpenAuthorizedViewServer) error {
	return unimplemented("OpenAuthorizedView", "Tabula has no authorized views")
}
