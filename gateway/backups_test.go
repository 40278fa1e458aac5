package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"cloud.google.com/go/bigtable"
	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"

	"github.com/tabuladb/tabula/internal/testkit"
)

// gatewayCluster is the gateway's one cluster id (Options.ClusterID's
// default).
const gatewayCluster = "tabula"

// backupIDs lists the backups of cluster through the official client.
func backupIDs(t *testing.T, a *bigtable.AdminClient, cluster string) []string {
	t.Helper()
	var ids []string
	it := a.Backups(testContext(t), cluster)
	for {
		b, err := it.Next()
		if err == iterator.Done {
			return ids
		}
		if err != nil {
			t.Fatalf("Backups(%s): %v", cluster, err)
		}
		ids = append(ids, b.Name)
	}
}

// TestBackupsThroughTheOfficialClient: CreateBackup, BackupInfo, Backups,
// UpdateBackup, RestoreTable and DeleteBackup of the official Go client
// map onto snapshots: a table restored from a backup reads the rows the
// source had when the backup was made, not those written after; bad input
// gets Bigtable's codes; a restore never overwrites a table.
func TestBackupsThroughTheOfficialClient(t *testing.T) {
	c, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "bk-src", SplitKeys: []string{"m"}, Families: map[string]bigtable.GCPolicy{"f": bigtable.NoGcPolicy()}})
	src := c.Open("bk-src")
	for _, row := range []string{"a", "k", "p", "z"} {
		apply(t, src, row, set("f", "q", 1000, "v-"+row))
	}
	want := readAll(t, src, bigtable.InfiniteRange(""))

	expire := time.Now().Add(7 * 24 * time.Hour).Truncate(time.Microsecond)
	if err := a.CreateBackup(ctx, "bk-src", gatewayCluster, "bk1", expire); err != nil {
		t.Fatalf("CreateBackup: %v", err)
	}
	t.Cleanup(func() { a.DeleteBackup(context.Background(), gatewayCluster, "bk1") })
	// Written after the backup: not in it.
	apply(t, src, "a", set("f", "q", 2000, "after"))
	apply(t, src, "b", set("f", "q", 2000, "after"))

	info, err := a.BackupInfo(ctx, gatewayCluster, "bk1")
	if err != nil {
		t.Fatalf("BackupInfo: %v", err)
	}
	if info.Name != "bk1" || info.SourceTable != "bk-src" || info.State != "READY" || !info.ExpireTime.Equal(expire) ||
		info.SizeBytes <= 0 || info.EndTime.Before(info.StartTime) || info.StartTime.IsZero() {
		t.Errorf("BackupInfo = %+v; want bk1 of bk-src, READY, expiring %v, with bytes", info, expire)
	}
	for _, cl := range []string{gatewayCluster, "-"} {
		if ids := backupIDs(t, a, cl); !slices.Contains(ids, "bk1") {
			t.Errorf("Backups(%s) = %v, want bk1 listed", cl, ids)
		}
	}

	later := expire.Add(3 * 24 * time.Hour)
	if err := a.UpdateBackup(ctx, gatewayCluster, "bk1", later); err != nil {
		t.Fatalf("UpdateBackup: %v", err)
	}
	if info, err := a.BackupInfo(ctx, gatewayCluster, "bk1"); err != nil || !info.ExpireTime.Equal(later) {
		t.Errorf("after UpdateBackup: BackupInfo = %+v, %v; want expiring %v", info, err, later)
	}
	testkit.WantCode(t, "UpdateBackup to an hour after creation", a.UpdateBackup(ctx, gatewayCluster, "bk1", time.Now().Add(time.Hour)), codes.InvalidArgument, "6 hours")

	if err := a.RestoreTable(ctx, "bk-restored", gatewayCluster, "bk1"); err != nil {
		t.Fatalf("RestoreTable: %v", err)
	}
	t.Cleanup(func() { a.DeleteTable(context.Background(), "bk-restored") })
	if got := readAll(t, c.Open("bk-restored"), bigtable.InfiniteRange("")); !slices.Equal(got, want) {
		t.Errorf("restored table reads\n%q\nwant the source at the backup\n%q", got, want)
	}
	testkit.WantCode(t, "restoring into the restored table again", a.RestoreTable(ctx, "bk-restored", gatewayCluster, "bk1"), codes.AlreadyExists, "")
	testkit.WantCode(t, "restoring over the source", a.RestoreTable(ctx, "bk-src", gatewayCluster, "bk1"), codes.AlreadyExists, "")
	testkit.WantCode(t, "restoring a missing backup", a.RestoreTable(ctx, "bk-none", gatewayCluster, "bk-missing"), codes.NotFound, "")

	// Bad input, before anything is made.
	week := time.Now().Add(7 * 24 * time.Hour)
	testkit.WantCode(t, "an expiry an hour away", a.CreateBackup(ctx, "bk-src", gatewayCluster, "bk2", time.Now().Add(time.Hour)), codes.InvalidArgument, "6 hours")
	testkit.WantCode(t, "an expiry 91 days away", a.CreateBackup(ctx, "bk-src", gatewayCluster, "bk2", time.Now().Add(91*24*time.Hour)), codes.InvalidArgument, "90 days")
	testkit.WantCode(t, "a bad backup id", a.CreateBackup(ctx, "bk-src", gatewayCluster, "-bad", week), codes.InvalidArgument, "backup id")
	testkit.WantCode(t, "a missing source table", a.CreateBackup(ctx, "bk-nosuch", gatewayCluster, "bk2", week), codes.NotFound, "")
	testkit.WantCode(t, "another cluster", a.CreateBackup(ctx, "bk-src", "other", "bk2", week), codes.NotFound, "cluster")
	testkit.WantCode(t, "an id taken", a.CreateBackup(ctx, "bk-src", gatewayCluster, "bk1", week), codes.AlreadyExists, "")
	if ids := backupIDs(t, a, gatewayCluster); slices.Contains(ids, "bk2") {
		t.Errorf("a refused CreateBackup made bk2: %v", ids)
	}

	// Deleted: gone, and the restored table still reads (it shares the
	// snapshot's files, which the retired snapshot keeps).
	if err := a.DeleteBackup(ctx, gatewayCluster, "bk1"); err != nil {
		t.Fatalf("DeleteBackup: %v", err)
	}
	_, err = a.BackupInfo(ctx, gatewayCluster, "bk1")
	testkit.WantCode(t, "BackupInfo of a deleted backup", err, codes.NotFound, "")
	testkit.WantCode(t, "deleting it again", a.DeleteBackup(ctx, gatewayCluster, "bk1"), codes.NotFound, "")
	if got := readAll(t, c.Open("bk-restored"), bigtable.InfiniteRange("")); !slices.Equal(got, want) {
		t.Errorf("restored table after DeleteBackup reads\n%q\nwant\n%q", got, want)
	}
}

// TestBackupOperationsAreListed: the operations CreateBackup and
// RestoreTable return are answered again by google.longrunning.Operations
// (GetOperation, ListOperations), done, with the same response.
func TestBackupOperationsAreListed(t *testing.T) {
	_, a := bigtableClients(t)
	ctx := testContext(t)
	createTable(t, a, &bigtable.TableConf{TableID: "bk-ops", Families: map[string]bigtable.GCPolicy{"f": bigtable.NoGcPolicy()}})
	conn, err := grpc.NewClient(cluster.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	admin, ops := btapb.NewBigtableTableAdminClient(conn), longrunningpb.NewOperationsClient(conn)
	parent := "projects/" + project + "/instances/" + instance + "/clusters/" + gatewayCluster
	op, err := admin.CreateBackup(ctx, &btapb.CreateBackupRequest{Parent: parent, BackupId: "bk-op",
		Backup: &btapb.Backup{SourceTable: tablePath("bk-ops"), ExpireTime: timestamppb.New(time.Now().Add(24 * time.Hour))}})
	if err != nil {
		t.Fatalf("CreateBackup: %v", err)
	}
	t.Cleanup(func() { a.DeleteBackup(context.Background(), gatewayCluster, "bk-op") })
	got, err := ops.GetOperation(ctx, &longrunningpb.GetOperationRequest{Name: op.GetName()})
	if err != nil || !got.GetDone() || got.GetName() != op.GetName() {
		t.Fatalf("GetOperation(%s) = %v, %v; want it, done", op.GetName(), got, err)
	}
	var b btapb.Backup
	if err := got.GetResponse().UnmarshalTo(&b); err != nil || b.GetName() != parent+"/backups/bk-op" || b.GetState() != btapb.Backup_READY {
		t.Errorf("GetOperation's response = %v, %v; want backup bk-op READY", &b, err)
	}
	list, err := ops.ListOperations(ctx, &longrunningpb.ListOperationsRequest{Name: parent})
	if err != nil {
		t.Fatalf("ListOperations: %v", err)
	}
	if !slices.ContainsFunc(list.GetOperations(), func(o *longrunningpb.Operation) bool { return o.GetName() == op.GetName() }) {
		t.Errorf("ListOperations(%s) does not list %s", parent, op.GetName())
	}
	_, err = ops.GetOperation(ctx, &longrunningpb.GetOperationRequest{Name: parent + "/operations/never"})
	testkit.WantCode(t, "GetOperation of an unknown operation", err, codes.NotFound, "")
}

// TestBackupsStayInTheirInstance: a backup of a table of an instance that
// is a namespace is listed, described and restorable there only; the
// default instance does not see it.
func TestBackupsStayInTheirInstance(t *testing.T) {
	_, def := bigtableClients(t)
	ctx := testContext(t)
	ia, err := bigtable.NewInstanceAdminClient(ctx, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ia.Close() })
	if err := ia.CreateInstance(ctx, &bigtable.InstanceConf{InstanceId: "bkns", DisplayName: "bkns", ClusterId: "c", Zone: "z", NumNodes: 1, StorageType: bigtable.SSD}); err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	t.Cleanup(func() {
		// After the tables' and the backup's cleanups (LIFO): the
		// namespace is empty by then, and later tests see one instance.
		if err := ia.DeleteInstance(context.Background(), "bkns"); err != nil {
			t.Errorf("DeleteInstance(bkns): %v", err)
		}
	})
	c, err := bigtable.NewClient(ctx, project, "bkns")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := bigtable.NewAdminClient(ctx, project, "bkns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() }) // after the cleanups that use it
	createTable(t, a, &bigtable.TableConf{TableID: "src", Families: map[string]bigtable.GCPolicy{"f": bigtable.NoGcPolicy()}})
	apply(t, c.Open("src"), "r", set("f", "q", 1000, "v"))
	if err := a.CreateBackup(ctx, "src", gatewayCluster, "bk-ns", time.Now().Add(24*time.Hour)); err != nil {
		t.Fatalf("CreateBackup: %v", err)
	}
	t.Cleanup(func() { a.DeleteBackup(context.Background(), gatewayCluster, "bk-ns") })
	if info, err := a.BackupInfo(ctx, gatewayCluster, "bk-ns"); err != nil || info.SourceTable != "src" {
		t.Fatalf("BackupInfo in its instance = %+v, %v", info, err)
	}
	if ids := backupIDs(t, a, gatewayCluster); !slices.Equal(ids, []string{"bk-ns"}) {
		t.Errorf("Backups of bkns = %v, want [bk-ns]", ids)
	}
	_, err = def.BackupInfo(ctx, gatewayCluster, "bk-ns")
	testkit.WantCode(t, "BackupInfo from the default instance", err, codes.NotFound, "")
	if ids := backupIDs(t, def, gatewayCluster); slices.Contains(ids, "bk-ns") {
		t.Errorf("the default instance lists bkns's backup: %v", ids)
	}
	testkit.WantCode(t, "RestoreTable from the default instance", def.RestoreTable(ctx, "bk-ns-stolen", gatewayCluster, "bk-ns"), codes.NotFound, "")
	if err := a.RestoreTable(ctx, "restored", gatewayCluster, "bk-ns"); err != nil {
		t.Fatalf("RestoreTable: %v", err)
	}
	t.Cleanup(func() { a.DeleteTable(context.Background(), "restored") })
	if got := readAll(t, c.Open("restored"), bigtable.InfiniteRange("")); !slices.Equal(got, []string{"r: f:q@1000=v"}) {
		t.Errorf("restored table reads %q", got)
	}
}
