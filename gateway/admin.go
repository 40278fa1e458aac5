package gateway

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// adminServer serves google.bigtable.admin.v2.BigtableTableAdmin, backups
// in backups.go. CopyBackup, snapshots, authorized views, schema bundles
// and IAM answer UNIMPLEMENTED (the embedded defaults name the method).
type adminServer struct {
	btapb.UnimplementedBigtableTableAdminServer
	s *Server
}

// UpdateTable changes deletion_protection, the one field of its update
// mask that Tabula has (through the master, so every gateway and the
// CLI see it at once), and answers a finished operation holding the
// table. Every other field answers UNIMPLEMENTED naming it, a path that is
// not a field of Table INVALID_ARGUMENT, both before anything changes.
func (a *adminServer) UpdateTable(ctx context.Context, req *btapb.UpdateTableRequest) (*longrunningpb.Operation, error) {
	n, err := a.s.parseTable(ctx, "table.name", req.GetTable().GetName())
	if err != nil {
		return nil, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, invalidf("update_mask is required: name the fields of table to change")
	}
	if !req.GetUpdateMask().IsValid(&btapb.Table{}) {
		return nil, invalidf("update_mask %v names a field that Table does not have", paths)
	}
	for _, p := range paths {
		if p != "deletion_protection" {
			return nil, unimplemented("UpdateTable of "+p, "of a table's fields Tabula changes only deletion_protection "+
				"(it has no change streams, automated backups or row key schemas)")
		}
	}
	start := timestamppb.Now()
	if err := a.s.c.Admin().SetDeletionProtection(ctx, n.table, req.GetTable().GetDeletionProtection()); err != nil {
		return nil, toStatus(err)
	}
	t, err := a.getTable(ctx, n, btapb.Table_SCHEMA_VIEW)
	if err != nil {
		return nil, err
	}
	return a.s.done(n.String()+"/operations/update-"+strconv.FormatInt(start.AsTime().UnixMicro(), 10),
		&btapb.UpdateTableMetadata{Name: n.String(), StartTime: start, EndTime: timestamppb.Now()}, t)
}

// done is doneOperation, kept for GetOperation (operations.go).
func (s *Server) done(name string, metadata, response proto.Message) (*longrunningpb.Operation, error) {
	op, err := doneOperation(name, metadata, response)
	if err == nil {
		s.ops.keep(op)
	}
	return op, err
}

// doneOperation is a finished long-running operation: the clients' Wait
// returns its response without polling (every change is done when the
// call returns; the Operations service answers it again, operations.go).
func doneOperation(name string, metadata, response proto.Message) (*longrunningpb.Operation, error) {
	md, err := anypb.New(metadata)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "packing the operation's metadata: %v", err)
	}
	resp, err := anypb.New(response)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "packing the operation's response: %v", err)
	}
	return &longrunningpb.Operation{Name: name, Metadata: md, Done: true, Result: &longrunningpb.Operation_Response{Response: resp}}, nil
}

// CreateTable creates a table with its families and initial splits.
func (a *adminServer) CreateTable(ctx context.Context, req *btapb.CreateTableRequest) (*btapb.Table, error) {
	in, err := parseInstance("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	n, err := a.s.parseTable(ctx, "table_id", in.String()+"/tables/"+req.GetTableId())
	if err != nil {
		return nil, err
	}
	t := req.GetTable()
	if g := t.GetGranularity(); g != btapb.Table_TIMESTAMP_GRANULARITY_UNSPECIFIED && g != btapb.Table_MILLIS {
		return nil, unimplemented("table.granularity "+g.String(), "tables served through the gateway have MILLIS granularity")
	}
	if t.GetChangeStreamConfig() != nil {
		return nil, unimplemented("table.change_stream_config", "Tabula has no change streams")
	}
	if t.GetAutomatedBackupPolicy() != nil {
		return nil, unimplemented("table.automated_backup_policy", "use `tabula backup schedule` for scheduled backups")
	}
	if t.GetRowKeySchema() != nil {
		return nil, unimplemented("table.row_key_schema", "Tabula has no row key schemas")
	}
	names := make([]string, 0, len(t.GetColumnFamilies()))
	for name := range t.GetColumnFamilies() {
		names = append(names, name)
	}
	sort.Strings(names)
	fams := make([]families.Family, 0, len(names))
	for _, name := range names {
		f, err := familyFrom(name, t.GetColumnFamilies()[name], families.Default(name), fmt.Sprintf("table.column_families[%q]", name))
		if err != nil {
			return nil, err
		}
		fams = append(fams, f)
	}
	splits := make([][]byte, 0, len(req.GetInitialSplits()))
	for i, s := range req.GetInitialSplits() {
		if len(s.GetKey()) == 0 {
			return nil, invalidf("initial_splits[%d].key must not be empty", i)
		}
		splits = append(splits, s.GetKey())
	}
	info := client.TableInfo{Name: n.table, Families: fams, DeletionProtection: t.GetDeletionProtection()}
	if err := a.s.c.Admin().CreateTableWithInfo(ctx, info, splits); err != nil {
		return nil, toStatus(err)
	}
	return a.getTable(ctx, n, btapb.Table_SCHEMA_VIEW)
}

func (a *adminServer) getTable(ctx context.Context, n tableName, view btapb.Table_View) (*btapb.Table, error) {
	info, err := a.s.c.Admin().DescribeTable(ctx, n.table)
	if err != nil {
		return nil, toStatus(err)
	}
	return a.s.protoTable(n, info, view), nil
}

// ListTables lists the tables of the parent instance's namespace
// (namespaces.go), by name, a page at a time when page_size is set.
func (a *adminServer) ListTables(ctx context.Context, req *btapb.ListTablesRequest) (*btapb.ListTablesResponse, error) {
	in, err := parseInstance("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	if req.GetPageSize() < 0 {
		return nil, invalidf("page_size must be >= 0, got %d", req.GetPageSize())
	}
	ns, err := a.s.ns.of(ctx, in)
	if err != nil {
		return nil, err
	}
	all, err := a.s.c.Admin().ListTables(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	// The instance's namespace's tables only, by table id.
	var infos []client.TableInfo
	for _, info := range all {
		if cell.InNamespace(info.Name, ns) {
			_, info.Name = cell.SplitTableName(info.Name)
			infos = append(infos, info)
		}
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	view := req.GetView()
	if view == btapb.Table_VIEW_UNSPECIFIED {
		view = btapb.Table_NAME_ONLY
	}
	resp := &btapb.ListTablesResponse{}
	for _, info := range infos {
		if info.State != "" && info.State != "enabled" {
			continue // being deleted
		}
		if req.GetPageToken() != "" && info.Name <= req.GetPageToken() {
			continue
		}
		if ps := int(req.GetPageSize()); ps > 0 && len(resp.Tables) == ps {
			resp.NextPageToken = resp.Tables[ps-1].Name[len(in.String())+len("/tables/"):]
			break
		}
		resp.Tables = append(resp.Tables, a.s.protoTable(tableName{instanceName: in, id: info.Name}, info, view))
	}
	return resp, nil
}

// GetTable describes one table; the default view is SCHEMA_VIEW.
func (a *adminServer) GetTable(ctx context.Context, req *btapb.GetTableRequest) (*btapb.Table, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	view := req.GetView()
	if view == btapb.Table_VIEW_UNSPECIFIED {
		view = btapb.Table_SCHEMA_VIEW
	}
	return a.getTable(ctx, n, view)
}

// DeleteTable deletes a table and all its data.
func (a *adminServer) DeleteTable(ctx context.Context, req *btapb.DeleteTableRequest) (*emptypb.Empty, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := a.s.c.Admin().DeleteTable(ctx, n.table); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// ModifyColumnFamilies creates, updates and drops families in order. It
// checks every modification against the current schema before applying
// any, so a bad request changes nothing; concurrent schema changes by
// others can still interleave with its steps (Tabula changes one family
// per master call).
func (a *adminServer) ModifyColumnFamilies(ctx context.Context, req *btapb.ModifyColumnFamiliesRequest) (*btapb.Table, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	if len(req.GetModifications()) == 0 {
		return nil, invalidf("modifications: none given; give at least one create, update or drop")
	}
	admin := a.s.c.Admin()
	info, err := admin.DescribeTable(ctx, n.table)
	if err != nil {
		return nil, toStatus(err)
	}
	current := map[string]families.Family{}
	for _, f := range info.Families {
		current[f.Name] = f
	}
	type step struct {
		drop bool
		add  bool
		f    families.Family
	}
	var steps []step
	for i, m := range req.GetModifications() {
		field := fmt.Sprintf("modifications[%d]", i)
		id := m.GetId()
		f, exists := current[id]
		switch x := m.GetMod().(type) {
		case *btapb.ModifyColumnFamiliesRequest_Modification_Create:
			if exists {
				return nil, status.Errorf(codes.AlreadyExists, "%s: column family %q already exists in table %s", field, id, n)
			}
			nf, err := familyFrom(id, x.Create, families.Default(id), field+".create")
			if err != nil {
				return nil, err
			}
			current[id] = nf
			steps = append(steps, step{add: true, f: nf})
		case *btapb.ModifyColumnFamiliesRequest_Modification_Update:
			if !exists {
				return nil, status.Errorf(codes.NotFound, "%s: column family %q does not exist in table %s", field, id, n)
			}
			paths := m.GetUpdateMask().GetPaths()
			if len(paths) == 0 {
				paths = impliedPaths(x.Update)
			}
			nf, err := familyUpdate(f, x.Update, paths, field+".update")
			if err != nil {
				return nil, err
			}
			current[id] = nf
			steps = append(steps, step{f: nf})
		case *btapb.ModifyColumnFamiliesRequest_Modification_Drop:
			if !x.Drop {
				return nil, invalidf("%s.drop must be true if set", field)
			}
			if !exists {
				return nil, status.Errorf(codes.NotFound, "%s: column family %q does not exist in table %s", field, id, n)
			}
			if info.DeletionProtection {
				// Before any step: a request that cannot finish changes
				// nothing. The master refuses the drop too, whoever asks.
				return nil, status.Errorf(codes.FailedPrecondition, "%s: column family %q cannot be dropped: table %s is protected from deletion; "+
					"lift it first with UpdateTable of deletion_protection (or `tabula table unprotect %s`)", field, id, n, n.table)
			}
			delete(current, id)
			steps = append(steps, step{drop: true, f: f})
		default:
			return nil, invalidf("%s: set create, update or drop", field)
		}
	}
	for _, st := range steps {
		var err error
		switch {
		case st.drop:
			err = admin.DeleteFamily(ctx, n.table, st.f.Name)
		case st.add:
			err = admin.AddFamily(ctx, n.table, st.f)
		default:
			err = admin.ModifyFamily(ctx, n.table, st.f)
		}
		if err != nil {
			return nil, toStatus(err)
		}
	}
	return a.getTable(ctx, n, btapb.Table_SCHEMA_VIEW)
}

// DropRowRange deletes every row with a key prefix, or all rows.
func (a *adminServer) DropRowRange(ctx context.Context, req *btapb.DropRowRangeRequest) (*emptypb.Empty, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	if err := dropRows(ctx, a.s, n, req); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// GenerateConsistencyToken answers a token for CheckConsistency. Tabula
// serves each tablet from one server and has no replicas, so every write
// acknowledged before the token was made is already visible everywhere.
func (a *adminServer) GenerateConsistencyToken(ctx context.Context, req *btapb.GenerateConsistencyTokenRequest) (*btapb.GenerateConsistencyTokenResponse, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	if _, err := a.s.c.Admin().DescribeTable(ctx, n.table); err != nil {
		return nil, toStatus(err)
	}
	return &btapb.GenerateConsistencyTokenResponse{ConsistencyToken: "tabula-" + strconv.FormatInt(time.Now().UnixMicro(), 10)}, nil
}

// CheckConsistency answers consistent for any token this gateway (or
// another) made: Tabula is strongly consistent, with no replication to
// wait for.
func (a *adminServer) CheckConsistency(ctx context.Context, req *btapb.CheckConsistencyRequest) (*btapb.CheckConsistencyResponse, error) {
	n, err := a.s.parseTable(ctx, "name", req.GetName())
	if err != nil {
		return nil, err
	}
	tok := req.GetConsistencyToken()
	if len(tok) < 8 || tok[:7] != "tabula-" {
		return nil, invalidf("consistency_token %q was not made by GenerateConsistencyToken of a Tabula gateway", tok)
	}
	if _, err := a.s.c.Admin().DescribeTable(ctx, n.table); err != nil {
		return nil, toStatus(err)
	}
	return &btapb.CheckConsistencyResponse{Consistent: true}, nil
}
