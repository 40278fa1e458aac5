package gateway_test

import (
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/internal/testkit"
)

// familyPolicies returns each family's GC policy as the client prints it.
func familyPolicies(t *testing.T, a *bigtable.AdminClient, table string) map[string]string {
	t.Helper()
	info, err := a.TableInfo(testContext(t), table)
	if err != nil {
		t.Fatalf("TableInfo(%s): %v", table, err)
	}
	out := map[string]string{}
	for _, f := range info.FamilyInfos {
		out[f.Name] = f.GCPolicy
	}
	return out
}

// TestTableAdminThroughTheOfficialClient: create (with splits and
// families), list, describe, modify families, consistency, delete.
func TestTableAdminThroughTheOfficialClient(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "admin", SplitKeys: []string{"g", "p"}, Families: map[string]bigtable.GCPolicy{
		"keep":     bigtable.NoGcPolicy(),
		"versions": bigtable.MaxVersionsPolicy(3),
		"age":      bigtable.MaxAgePolicy(48 * time.Hour),
		"both":     bigtable.UnionPolicy(bigtable.MaxVersionsPolicy(2), bigtable.MaxAgePolicy(time.Hour)),
		"either":   bigtable.IntersectionPolicy(bigtable.MaxVersionsPolicy(1), bigtable.MaxAgePolicy(time.Hour)),
	}})
	err := a.CreateTable(ctx, "admin")
	testkit.WantCode(t, "creating it again", err, codes.AlreadyExists, "admin")

	tables, err := a.Tables(ctx)
	if err != nil || !slices.Contains(tables, "admin") {
		t.Fatalf("Tables = %v, %v; want admin listed", tables, err)
	}
	got := familyPolicies(t, a, "admin")
	want := map[string]string{
		"keep": "", "versions": "versions() > 3", "age": "age() > 2d",
		"both": "(versions() > 2 || age() > 1h)", "either": "(versions() > 1 && age() > 1h)",
	}
	for f, p := range want {
		if got[f] != p {
			t.Errorf("family %s: GC policy %q, want %q", f, got[f], p)
		}
	}

	// The tablets exist where the splits asked: a scan crosses them.
	tbl := c.Open("admin")
	for _, row := range []string{"a", "h", "q"} {
		apply(t, tbl, row, set("keep", "q", 1000, row))
	}
	if rows := readAll(t, tbl, bigtable.InfiniteRange("")); len(rows) != 3 {
		t.Errorf("read %d rows across the split points, want 3", len(rows))
	}

	// Families: create, set policies, delete.
	if err := a.CreateColumnFamily(ctx, "admin", "added"); err != nil {
		t.Fatal(err)
	}
	testkit.WantCode(t, "creating a family twice", a.CreateColumnFamily(ctx, "admin", "added"), codes.AlreadyExists, "added")
	if err := a.SetGCPolicy(ctx, "admin", "added", bigtable.MaxVersionsPolicy(5)); err != nil {
		t.Fatal(err)
	}
	if err := a.SetGCPolicy(ctx, "admin", "versions", bigtable.NoGcPolicy()); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteColumnFamily(ctx, "admin", "age"); err != nil {
		t.Fatal(err)
	}
	testkit.WantCode(t, "deleting an absent family", a.DeleteColumnFamily(ctx, "admin", "age"), codes.NotFound, "age")
	got = familyPolicies(t, a, "admin")
	if _, ok := got["age"]; ok || got["added"] != "versions() > 5" || got["versions"] != "" {
		t.Errorf("after modifications: %v", got)
	}
	// A family's storage settings survive a GC change through the gateway.
	if err := a.WaitForReplication(ctx, "admin"); err != nil {
		t.Errorf("WaitForReplication: %v", err)
	}

	if err := a.DeleteTable(ctx, "admin"); err != nil {
		t.Fatal(err)
	}
	if tables, _ := a.Tables(ctx); slices.Contains(tables, "admin") {
		t.Errorf("admin still listed after DeleteTable: %v", tables)
	}
	_, err = a.TableInfo(ctx, "admin")
	testkit.WantCode(t, "TableInfo of a deleted table", err, codes.NotFound, "admin")
}

// TestInstanceAdminForTools: the instance and cluster listings tools use.
func TestInstanceAdminForTools(t *testing.T) {
	bigtableClients(t) // sets BIGTABLE_EMULATOR_HOST
	ctx := testContext(t)
	ia, err := bigtable.NewInstanceAdminClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close()
	ins, err := ia.Instances(ctx)
	if err != nil || len(ins) != 1 || ins[0].Name != "tabula" {
		t.Fatalf("Instances = %+v, %v; want one instance named tabula", ins, err)
	}
	info, err := ia.InstanceInfo(ctx, instance)
	if err != nil || info.Name != instance {
		t.Errorf("InstanceInfo(%s) = %+v, %v", instance, info, err)
	}
	cl, err := ia.Clusters(ctx, instance)
	if err != nil || len(cl) != 1 || cl[0].Name != "tabula" || cl[0].ServeNodes != 2 {
		t.Fatalf("Clusters = %+v, %v; want one cluster of 2 nodes", cl, err)
	}
	if _, err := ia.GetCluster(ctx, instance, "tabula"); err != nil {
		t.Errorf("GetCluster: %v", err)
	}
	_, err = ia.GetCluster(ctx, instance, "other")
	testkit.WantCode(t, "GetCluster of an unknown cluster", err, codes.NotFound, "other")
	// An instance is a namespace: CreateInstance makes one, listed with
	// the default instance; DeleteInstance deletes it, and an instance that
	// is not a namespace has nothing to delete.
	err = ia.CreateInstance(ctx, &bigtable.InstanceConf{InstanceId: "team", DisplayName: "team a", ClusterId: "c", Zone: "z", NumNodes: 1, StorageType: bigtable.SSD})
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	ins, err = ia.Instances(ctx)
	if err != nil || len(ins) != 2 || ins[0].Name != "tabula" || ins[1].Name != "team" || ins[1].DisplayName != "team a" {
		t.Fatalf("Instances after CreateInstance = %+v, %v; want tabula and team", ins, err)
	}
	err = ia.CreateInstance(ctx, &bigtable.InstanceConf{InstanceId: "team", DisplayName: "team a", ClusterId: "c", Zone: "z", NumNodes: 1, StorageType: bigtable.SSD})
	testkit.WantCode(t, "CreateInstance twice", err, codes.AlreadyExists, "team")
	if err := ia.DeleteInstance(ctx, "team"); err != nil {
		t.Fatalf("DeleteInstance: %v", err)
	}
	err = ia.DeleteInstance(ctx, instance)
	testkit.WantCode(t, "DeleteInstance of an instance that is no namespace", err, codes.NotFound, instance)
}

// TestOperationsTabulaLacksAreUnimplemented: never a silent success.
func TestOperationsTabulaLacksAreUnimplemented(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "lacks", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	testkit.WantCode(t, "CopyBackup", a.CopyBackup(ctx, "tabula", "b1", project, instance, "tabula", "b2", time.Now().Add(24*time.Hour)), codes.Unimplemented, "CopyBackup")
	testkit.WantCode(t, "SnapshotTable", a.SnapshotTable(ctx, "lacks", "tabula", "s1", time.Hour), codes.Unimplemented, "SnapshotTable")
	testkit.WantCode(t, "a change stream", a.UpdateTableWithChangeStream(ctx, "lacks", time.Hour), codes.Unimplemented, "UpdateTable of change_stream_config")
	testkit.WantCode(t, "CreateAuthorizedView", a.CreateAuthorizedView(ctx, &bigtable.AuthorizedViewConf{TableID: "lacks", AuthorizedViewID: "v",
		AuthorizedView: &bigtable.SubsetViewConf{RowPrefixes: [][]byte{[]byte("a")}}}), codes.Unimplemented, "AuthorizedView")
	_, err := c.PrepareStatement(ctx, "SELECT * FROM lacks", nil)
	testkit.WantCode(t, "PrepareStatement", err, codes.Unimplemented, "PrepareQuery")
	_, err = c.OpenAuthorizedView("lacks", "v").ReadRow(ctx, "r")
	testkit.WantCode(t, "reading through an authorized view", err, codes.Unimplemented, "authorized views")
}
