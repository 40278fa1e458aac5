package auth

import (
	"maps"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/tabuladb/tabula/api/tabulapb"
)

// Rule is what one RPC method needs of its caller.
type Rule struct {
	// Open calls need no credentials (WhoAmI).
	Open bool
	// MasterOnly calls accept only the master's certificate.
	MasterOnly bool
	// Role is needed on every table Tables names, or on AllTables for a
	// Cluster call. None with neither: any authenticated caller.
	Role    Role
	Cluster bool
	Tables  func(req any) []string
	// Audit writes an audit line for the call, allowed or not.
	Audit bool
}

func one(name string) []string { return []string{name} }

// MasterRules are the rules of the Master service.
func MasterRules() map[string]Rule {
	const svc = "/" + "tabula.v1.Master/"
	adminOn := func(f func(req any) string) Rule {
		return Rule{Role: Admin, Tables: func(r any) []string { return one(f(r)) }, Audit: true}
	}
	readOn := func(f func(req any) string) Rule {
		return Rule{Role: Read, Tables: func(r any) []string { return one(f(r)) }}
	}
	clusterAdmin := Rule{Role: Admin, Cluster: true, Audit: true}
	rules := map[string]Rule{
		svc + "CreateTable":   adminOn(func(r any) string { return r.(*pb.CreateTableRequest).GetSchema().GetName() }),
		svc + "DeleteTable":   adminOn(func(r any) string { return r.(*pb.DeleteTableRequest).GetTable() }),
		svc + "AddFamily":     adminOn(func(r any) string { return r.(*pb.FamilyRequest).GetTable() }),
		svc + "ModifyFamily":  adminOn(func(r any) string { return r.(*pb.FamilyRequest).GetTable() }),
		svc + "DeleteFamily":  adminOn(func(r any) string { return r.(*pb.DeleteFamilyRequest).GetTable() }),
		svc + "SplitTablet":   adminOn(func(r any) string { return r.(*pb.SplitTabletRequest).GetTable() }),
		svc + "CompactTable":  adminOn(func(r any) string { return r.(*pb.CompactTableRequest).GetTable() }),
		svc + "FlushTable":    adminOn(func(r any) string { return r.(*pb.FlushTableRequest).GetTable() }),
		svc + "DropRowRange":  adminOn(func(r any) string { return r.(*pb.DropRowRangeRequest).GetTable() }),
		svc + "MergeTablets":  adminOn(func(r any) string { return r.(*pb.MergeTabletsRequest).GetTable() }),
		svc + "ListTables":    {},
		svc + "DescribeTable": readOn(func(r any) string { return r.(*pb.DescribeTableRequest).GetTable() }),
		svc + "LocateTablet":  readOn(func(r any) string { return r.(*pb.LocateTabletRequest).GetTable() }),
		svc + "LocateRange":   readOn(func(r any) string { return r.(*pb.LocateRangeRequest).GetTable() }),
		svc + "ListTablets":   readOn(func(r any) string { return r.(*pb.ListTabletsRequest).GetTable() }),
		svc + "ListServers":   {Role: Read, Cluster: true},
		// Every table's load: read on every table, as ListServers.
		svc + "TopTablets":            {Role: Read, Cluster: true},
		svc + "Balance":               clusterAdmin,
		svc + "MoveTablet":            adminOn(func(r any) string { return r.(*pb.MoveTabletRequest).GetTable() }),
		svc + "SetBalancer":           clusterAdmin,
		svc + "SetAutoMerge":          adminOn(func(r any) string { return r.(*pb.SetAutoMergeRequest).GetTable() }),
		svc + "SetDeletionProtection": adminOn(func(r any) string { return r.(*pb.SetDeletionProtectionRequest).GetTable() }),
		svc + "GetBalancer":           {Role: Read, Cluster: true},
		svc + "CreateToken":           clusterAdmin,
		svc + "ListTokens":            {Role: Admin, Cluster: true},
		svc + "RevokeToken":           clusterAdmin,
		svc + "Grant":                 clusterAdmin,
		svc + "Revoke":                clusterAdmin,
		svc + "ListGrants":            {Role: Admin, Cluster: true},
		svc + "WhoAmI":                {Open: true},
	}
	maps.Copy(rules, HealthRules())
	maps.Copy(rules, NamespaceRules())
	maps.Copy(rules, QuotaRules())
	maps.Copy(rules, SnapshotRules())
	maps.Copy(rules, BackupScheduleRules())
	return rules
}

// NamespaceRules are the rules of the Namespaces service, which the
// master serves beside Master: creating, changing and deleting a namespace
// is the cluster admin's (an admin of "ns:*" administers the tables in it,
// not its limits); listing is any caller's, as ListTables.
func NamespaceRules() map[string]Rule {
	const svc = "/" + "tabula.v1.Namespaces/"
	clusterAdmin := Rule{Role: Admin, Cluster: true, Audit: true}
	return map[string]Rule{
		svc + "CreateNamespace":   clusterAdmin,
		svc + "UpdateNamespace":   clusterAdmin,
		svc + "DeleteNamespace":   clusterAdmin,
		svc + "ListNamespaces":    {},
		svc + "DescribeNamespace": {},
	}
}

// QuotaRules are the rules of the Quotas service, which the master serves
// beside Master (docs/OPERATIONS.md "Quotas"), as HBase's AccessController
// has them for set_quota: a table's quota needs admin on the table (which
// an admin of its namespace, "ns:*", or of the cluster has); a
// namespace's or a principal's needs the cluster's admin role (an admin
// of "ns:*" administers the tables in it, not its limits, as with
// UpdateNamespace), so a tenant cannot lift the limits the operator set
// on it. Listing needs read on the cluster, as ListServers: the list
// names every table, namespace and principal with a quota.
func QuotaRules() map[string]Rule {
	const svc = "/" + "tabula.v1.Quotas/"
	on := func(scope, name string) []string {
		if scope == "table" {
			return one(name)
		}
		return one(AllTables)
	}
	return map[string]Rule{
		svc + "SetQuota": {Role: Admin, Audit: true, Tables: func(r any) []string {
			q := r.(*pb.SetQuotaRequest)
			return on(q.GetScope(), q.GetName())
		}},
		svc + "RemoveQuota": {Role: Admin, Audit: true, Tables: func(r any) []string {
			q := r.(*pb.RemoveQuotaRequest)
			return on(q.GetScope(), q.GetName())
		}},
		svc + "ListQuotas": {Role: Read, Cluster: true},
	}
}

// BackupScheduleRules are the rules of the BackupSchedules service, which
// the master serves beside Master (docs/OPERATIONS.md "Scheduled
// backups"): setting and deleting a table's schedule needs admin on the
// table, as creating its snapshot does (the master takes one per run);
// listing needs read on the cluster: the list names every scheduled table.
func BackupScheduleRules() map[string]Rule {
	const svc = "/" + "tabula.v1.BackupSchedules/"
	return map[string]Rule{
		svc + "SetBackupSchedule":    {Role: Admin, Audit: true, Tables: func(r any) []string { return one(r.(*pb.SetBackupScheduleRequest).GetTable()) }},
		svc + "DeleteBackupSchedule": {Role: Admin, Audit: true, Tables: func(r any) []string { return one(r.(*pb.DeleteBackupScheduleRequest).GetTable()) }},
		svc + "ListBackupSchedules":  {Role: Read, Cluster: true},
	}
}

// ingestTablet is the tablet of an IngestRows message: a
// tabulapb.IngestRowsRequest, or the message a tablet server receives
// it as (api/convert.IngestRequest, its rows decoded as bytes); either
// says its tablet.
func ingestTablet(r any) *pb.TabletRef {
	return r.(interface{ GetTablet() *pb.TabletRef }).GetTablet()
}

// TabletServerRules are the rules of the TabletServer service.
func TabletServerRules() map[string]Rule {
	const svc = "/" + "tabula.v1.TabletServer/"
	const bulk = "/" + "tabula.v1.BulkLoad/"
	on := func(role Role, f func(req any) *pb.TabletRef) Rule {
		return Rule{Role: role, Tables: func(r any) []string { return one(f(r).GetTable()) }}
	}
	master := Rule{MasterOnly: true}
	rules := map[string]Rule{
		svc + "ReadRows":           on(Read, func(r any) *pb.TabletRef { return r.(*pb.ReadRowsRequest).GetTablet() }),
		svc + "ReadRow":            on(Read, func(r any) *pb.TabletRef { return r.(*pb.ReadRowRequest).GetTablet() }),
		svc + "SampleRowKeys":      on(Read, func(r any) *pb.TabletRef { return r.(*pb.SampleRowKeysRequest).GetTablet() }),
		svc + "MutateRow":          on(Write, func(r any) *pb.TabletRef { return r.(*pb.MutateRowRequest).GetTablet() }),
		svc + "CheckAndMutateRow":  on(Write, func(r any) *pb.TabletRef { return r.(*pb.CheckAndMutateRowRequest).GetTablet() }),
		svc + "ReadModifyWriteRow": on(Write, func(r any) *pb.TabletRef { return r.(*pb.ReadModifyWriteRowRequest).GetTablet() }),
		svc + "MutateRows":         {Role: Write, Tables: mutateRowsTables},
		bulk + "IngestRows":        on(Write, ingestTablet),
		svc + "LoadTablet":         master,
		svc + "LoadTablets":        master,
		svc + "UnloadTablet":       master,
		svc + "FlushTablet":        master,
		svc + "CompactTablet":      master,
		svc + "SplitTablet":        master,
		svc + "UpdateSchema":       master,
		svc + "ServerStats":        master,
		svc + "DropRange":          master,
		svc + "MergeTablets":       master,
		// Snapshots (snapshot.proto): a tablet's hold, the master's call.
		"/" + "tabula.v1.TabletSnapshots/HoldTablet": master,
	}
	maps.Copy(rules, HealthRules())
	return rules
}

// SnapshotRules are the rules of the Snapshots service, which the master
// serves beside Master (docs/OPERATIONS.md "Snapshots"), as HBase's
// AccessController has them: creating and deleting a snapshot needs admin
// on its table, describing it read on its table; listing every table's
// needs read on the cluster, one table's read on that table. Describe and
// delete name the snapshot only: the master checks the role on the
// snapshot's table itself (master/snapshots.go), as this table cannot
// name it. Cloning needs admin on the new table (as CreateTable) and, the
// master checks, read on the snapshot's; restoring admin on the
// snapshot's table, which the master checks; so does updating one's
// expire time.
func SnapshotRules() map[string]Rule {
	const svc = "/" + "tabula.v1.Snapshots/"
	return map[string]Rule{
		svc + "CreateSnapshot": {Role: Admin, Audit: true, Tables: func(r any) []string { return one(r.(*pb.CreateSnapshotRequest).GetTable()) }},
		svc + "ListSnapshots": {Role: Read, Tables: func(r any) []string {
			if t := r.(*pb.ListSnapshotsRequest).GetTable(); t != "" {
				return one(t)
			}
			return one(AllTables)
		}},
		svc + "DescribeSnapshot": {},
		svc + "DeleteSnapshot":   {Audit: true},
		svc + "CloneSnapshot":    {Role: Admin, Audit: true, Tables: func(r any) []string { return one(r.(*pb.CloneSnapshotRequest).GetTable()) }},
		svc + "RestoreSnapshot":  {Audit: true},
		svc + "UpdateSnapshot":   {Audit: true},
	}
}

// HealthRules open the standard gRPC health service to anyone who can
// reach the port: probes (Kubernetes, load balancers, docker) carry no
// credentials, and the answer (SERVING or not) reveals nothing.
func HealthRules() map[string]Rule {
	return map[string]Rule{
		healthpb.Health_Check_FullMethodName: {Open: true},
		healthpb.Health_Watch_FullMethodName: {Open: true},
		healthpb.Health_List_FullMethodName:  {Open: true},
	}
}

// mutateRowsTables lists the distinct tables of a batch's entries (one in
// practice: the client batches per tablet).
func mutateRowsTables(r any) []string {
	var out []string
	for _, e := range r.(*pb.MutateRowsRequest).GetEntries() {
		t := e.GetTablet().GetTable()
		if len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}
