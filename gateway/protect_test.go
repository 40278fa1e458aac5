package gateway_test

import (
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit"
)

// rawAdmin is a bare table admin client on the gateway, for requests the
// official client does not build (several modifications in one call).
func rawAdmin(t *testing.T) btapb.BigtableTableAdminClient {
	t.Helper()
	conn, err := grpc.NewClient(cluster.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return btapb.NewBigtableTableAdminClient(conn)
}

// TestDeletionProtectionThroughTheGateway: a table created protected, or
// protected with UpdateTable, cannot be deleted nor lose a family, through
// the gateway and through Tabula's own client, until UpdateTable lifts the
// protection; the other UpdateTable fields answer UNIMPLEMENTED naming
// the field.
func TestDeletionProtectionThroughTheGateway(t *testing.T) {
	_, a := bigtableClients(t)
	ctx := testContext(t)
	native, err := client.NewClient(ctx, cluster.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer native.Close()

	createTable(t, a, &bigtable.TableConf{TableID: "guarded", DeletionProtection: bigtable.Protected,
		Families: map[string]bigtable.GCPolicy{"fam1": bigtable.MaxVersionsPolicy(1), "fam2": bigtable.MaxVersionsPolicy(2)}})
	info, err := a.TableInfo(ctx, "guarded")
	if err != nil || info.DeletionProtection != bigtable.Protected {
		t.Fatalf("TableInfo = %+v, %v; want the table protected", info, err)
	}
	if ti, err := native.Admin().DescribeTable(ctx, "guarded"); err != nil || !ti.DeletionProtection {
		t.Fatalf("DescribeTable through Tabula's client = %+v, %v; want it protected", ti, err)
	}
	list, err := rawAdmin(t).ListTables(ctx, &btapb.ListTablesRequest{Parent: "projects/" + project + "/instances/" + instance, View: btapb.Table_SCHEMA_VIEW})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, tb := range list.GetTables() {
		if tb.GetName() == tablePath("guarded") {
			listed = tb.GetDeletionProtection()
		}
	}
	if !listed {
		t.Errorf("ListTables(SCHEMA_VIEW) does not list %s as protected", tablePath("guarded"))
	}

	refused := func(what string, err error) {
		t.Helper()
		testkit.WantCode(t, what, err, codes.FailedPrecondition, "protected from deletion")
	}
	refused("DeleteTable", a.DeleteTable(ctx, "guarded"))
	refused("DeleteColumnFamily", a.DeleteColumnFamily(ctx, "guarded", "fam1"))
	refused("DeleteTable through Tabula's client", native.Admin().DeleteTable(ctx, "guarded"))
	refused("DeleteFamily through Tabula's client", native.Admin().DeleteFamily(ctx, "guarded", "fam2"))
	// A request that also drops a family changes nothing, not even its
	// steps before the drop.
	_, err = rawAdmin(t).ModifyColumnFamilies(ctx, &btapb.ModifyColumnFamiliesRequest{Name: tablePath("guarded"),
		Modifications: []*btapb.ModifyColumnFamiliesRequest_Modification{
			{Id: "fam3", Mod: &btapb.ModifyColumnFamiliesRequest_Modification_Create{Create: &btapb.ColumnFamily{}}},
			{Id: "fam1", Mod: &btapb.ModifyColumnFamiliesRequest_Modification_Drop{Drop: true}},
		}})
	refused("ModifyColumnFamilies creating fam3 and dropping fam1", err)
	if got := familyPolicies(t, a, "guarded"); len(got) != 2 {
		t.Errorf("families after the refused modification: %v, want fam1 and fam2 only", got)
	}

	// Only deletion_protection can be updated; a mask naming another field
	// changes nothing.
	testkit.WantCode(t, "a change stream", a.UpdateTableWithChangeStream(ctx, "guarded", 24*time.Hour),
		codes.Unimplemented, "UpdateTable of change_stream_config.retention_period")
	testkit.WantCode(t, "disabling automated backups", a.UpdateTableDisableAutomatedBackupPolicy(ctx, "guarded"),
		codes.Unimplemented, "UpdateTable of automated_backup_policy")
	_, err = rawAdmin(t).UpdateTable(ctx, &btapb.UpdateTableRequest{Table: &btapb.Table{Name: tablePath("guarded")},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"deletion_protection", "no_such_field"}}})
	testkit.WantCode(t, "an unknown field", err, codes.InvalidArgument, "no_such_field")
	refused("DeleteTable after refused updates", a.DeleteTable(ctx, "guarded"))

	if err := a.UpdateTableWithDeletionProtection(ctx, "guarded", bigtable.Unprotected); err != nil {
		t.Fatalf("lifting the protection: %v", err)
	}
	if info, err := a.TableInfo(ctx, "guarded"); err != nil || info.DeletionProtection != bigtable.Unprotected {
		t.Fatalf("TableInfo after lifting = %+v, %v; want unprotected", info, err)
	}
	if err := a.DeleteColumnFamily(ctx, "guarded", "fam1"); err != nil {
		t.Fatalf("DeleteColumnFamily once unprotected: %v", err)
	}

	// Protected again with UpdateTable, through the gateway: Tabula's own
	// client is refused too, then not once it is lifted.
	if err := a.UpdateTableWithDeletionProtection(ctx, "guarded", bigtable.Protected); err != nil {
		t.Fatalf("protecting: %v", err)
	}
	refused("DeleteTable through Tabula's client after UpdateTable", native.Admin().DeleteTable(ctx, "guarded"))
	if err := native.Admin().SetDeletionProtection(ctx, "guarded", false); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteTable(ctx, "guarded"); err != nil {
		t.Fatalf("DeleteTable once unprotected: %v", err)
	}
	tables, err := a.Tables(ctx)
	if err != nil || slices.Contains(tables, "guarded") {
		t.Errorf("Tables after the delete = %v, %v", tables, err)
	}
}

// TestUpdateFamilyValueType: a plain family gets a declared value type
// (kept by the master, so Tabula's client sees it, and its GC rule
// untouched when the mask names only value_type) and stays writable; an
// aggregate's type cannot change (Bigtable's message), nor a plain
// family become an aggregate.
func TestUpdateFamilyValueType(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "typed", Families: map[string]bigtable.GCPolicy{"plain": bigtable.MaxVersionsPolicy(2)}})
	sum := bigtable.AggregateType{Input: bigtable.Int64Type{}, Aggregator: bigtable.SumAggregator{}}
	if err := a.CreateColumnFamilyWithConfig(ctx, "typed", "sum", bigtable.Family{ValueType: sum}); err != nil {
		t.Fatal(err)
	}

	str := bigtable.StringType{Encoding: bigtable.StringUtf8BytesEncoding{}}
	if err := a.UpdateFamily(ctx, "typed", "plain", bigtable.Family{ValueType: str}); err != nil {
		t.Fatalf("giving a plain family a string type: %v", err)
	}
	info, err := a.TableInfo(ctx, "typed")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range info.FamilyInfos {
		if f.Name != "plain" {
			continue
		}
		if _, ok := f.ValueType.(bigtable.StringType); !ok {
			t.Errorf("family plain: value type %#v, want a string type", f.ValueType)
		}
		if f.GCPolicy != "versions() > 2" {
			t.Errorf("family plain: GC policy %q after a value_type update, want versions() > 2 kept", f.GCPolicy)
		}
	}
	native, err := client.NewClient(ctx, cluster.MasterAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer native.Close()
	ti, err := native.Admin().DescribeTable(ctx, "typed")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ti.Families {
		if f.Name == "plain" && f.DeclaredType == "" {
			t.Errorf("the master's schema of family plain has no declared type")
		}
	}
	if err := c.Open("typed").Apply(ctx, "r", set("plain", "q", 1000, "text")); err != nil {
		t.Errorf("writing to the typed family: %v", err)
	}

	err = a.UpdateFamily(ctx, "typed", "sum", bigtable.Family{ValueType: bigtable.StringType{}})
	testkit.WantCode(t, "changing an aggregate's type", err, codes.InvalidArgument, "Immutable fields 'value_type.aggregate_type' cannot be updated")
	err = a.UpdateFamily(ctx, "typed", "plain", bigtable.Family{ValueType: sum})
	testkit.WantCode(t, "a plain family made an aggregate", err, codes.InvalidArgument, "cannot become a sum aggregate")
	// The same aggregate again is no change.
	if err := a.UpdateFamily(ctx, "typed", "sum", bigtable.Family{ValueType: sum}); err != nil {
		t.Errorf("updating an aggregate to its own type: %v", err)
	}
}
