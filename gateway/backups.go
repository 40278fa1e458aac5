package gateway

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"

	btapb "cloud.google.com/go/bigtable/admin/apiv2/adminpb"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
)

// Backups (docs/GATEWAY.md "Backups"): a Bigtable backup B of cluster C is
// the Tabula snapshot named B (docs/OPERATIONS.md "Snapshots"): in the
// cluster, metadata only, made at once. Its table is in the instance's
// namespace; snapshot names are one space for the whole cluster, so two
// instances cannot both have a backup B. Once its expire time passes the
// master deletes it (docs/CONTRACTS.md §4a).

// Bigtable's bounds on a backup's expire time, from its creation.
const (
	minBackupLife = 6 * time.Hour
	maxBackupLife = 90 * 24 * time.Hour
)

// backupIDPattern is Bigtable's backup_id format, 1 to 50 characters.
var backupIDPattern = regexp.MustCompile(`^[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}$`)

// backupName is a parsed "projects/P/instances/I/clusters/C/backups/B".
type backupName struct {
	instanceName
	cluster, id string
}

func (n backupName) String() string {
	return n.instanceName.String() + "/clusters/" + n.cluster + "/backups/" + n.id
}

// parseCluster parses "projects/P/instances/I/clusters/C"; C must be the
// gateway's one cluster (NOT_FOUND otherwise), or "-" when anyCluster.
func (s *Server) parseCluster(field, name string, anyCluster bool) (instanceName, string, error) {
	k := strings.LastIndex(name, "/clusters/")
	if k < 0 {
		return instanceName{}, "", invalidf("%s %q is not a valid cluster name: expected projects/<project>/instances/<instance>/clusters/<cluster>", field, name)
	}
	in, err := parseInstance(field, name[:k])
	if err != nil {
		return instanceName{}, "", err
	}
	id := name[k+len("/clusters/"):]
	if !(id == s.opts.ClusterID || anyCluster && id == "-") {
		return instanceName{}, "", notFoundf("cluster %q not found: the gateway's one cluster is %q", name, s.opts.ClusterID)
	}
	return in, id, nil
}

// parseBackup parses a backup's resource name.
func (s *Server) parseBackup(field, name string) (backupName, error) {
	k := strings.LastIndex(name, "/backups/")
	if k < 0 {
		return backupName{}, invalidf("%s %q is not a valid backup name: expected projects/<project>/instances/<instance>/clusters/<cluster>/backups/<backup>", field, name)
	}
	in, cluster, err := s.parseCluster(field, name[:k], false)
	if err != nil {
		return backupName{}, err
	}
	n := backupName{instanceName: in, cluster: cluster, id: name[k+len("/backups/"):]}
	if !backupIDPattern.MatchString(n.id) {
		return backupName{}, invalidf("%s %q: a backup id is 1 to 50 characters of [-_.a-zA-Z0-9], not starting with - or .", field, name)
	}
	return n, nil
}

// checkExpire checks expire is between 6 hours and 90 days after from,
// as Bigtable does at creation (from: now) and update (from: creation).
func checkExpire(expire *timestamppb.Timestamp, from time.Time) (time.Time, error) {
	if expire == nil {
		return time.Time{}, invalidf("backup.expire_time is required")
	}
	if err := expire.CheckValid(); err != nil {
		return time.Time{}, invalidf("backup.expire_time: %v", err)
	}
	t := expire.AsTime()
	if t.Before(from.Add(minBackupLife)) || t.After(from.Add(maxBackupLife)) {
		return time.Time{}, invalidf("backup.expire_time %s must be between 6 hours and 90 days after %s", t.Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// backup describes the snapshot of backup n, NOT_FOUND if it does not
// exist or its table is not in n's instance.
func (s *Server) backup(ctx context.Context, n backupName) (*btapb.Backup, error) {
	d, err := s.c.Admin().DescribeSnapshot(ctx, n.id)
	if err != nil {
		return nil, toStatus(err)
	}
	ns, err := s.ns.of(ctx, n.instanceName)
	if err != nil {
		return nil, err
	}
	if !cell.InNamespace(d.Table, ns) {
		return nil, notFoundf("backup %s does not exist", n)
	}
	return protoBackup(n, d), nil
}

// protoBackup is the Backup of snapshot d. Tabula records one time for a
// snapshot, which is both its start and end time; its size is every byte
// of the files it holds, shared or not.
func protoBackup(n backupName, d client.SnapshotDescription) *btapb.Backup {
	_, table := cell.SplitTableName(d.Table)
	b := &btapb.Backup{
		Name:        n.String(),
		SourceTable: n.instanceName.String() + "/tables/" + table,
		StartTime:   timestamppb.New(d.Created),
		EndTime:     timestamppb.New(d.Created),
		SizeBytes:   int64(d.Bytes),
		State:       btapb.Backup_CREATING,
		BackupType:  btapb.Backup_STANDARD,
		// Not nil: the Go client reads it without a check. Tabula says
		// nothing of how the store encrypts its files.
		EncryptionInfo: &btapb.EncryptionInfo{},
	}
	if d.State == "ready" {
		b.State = btapb.Backup_READY
	}
	if !d.Expires.IsZero() {
		b.ExpireTime = timestamppb.New(d.Expires)
	}
	return b
}

// CreateBackup snapshots the source table as the backup and answers a
// finished operation holding it.
func (a *adminServer) CreateBackup(ctx context.Context, req *btapb.CreateBackupRequest) (*longrunningpb.Operation, error) {
	in, cluster, err := a.s.parseCluster("parent", req.GetParent(), false)
	if err != nil {
		return nil, err
	}
	if !backupIDPattern.MatchString(req.GetBackupId()) {
		return nil, invalidf("backup_id %q: a backup id is 1 to 50 characters of [-_.a-zA-Z0-9], not starting with - or .", req.GetBackupId())
	}
	n := backupName{instanceName: in, cluster: cluster, id: req.GetBackupId()}
	b := req.GetBackup()
	src, err := a.s.parseTable(ctx, "backup.source_table", b.GetSourceTable())
	if err != nil {
		return nil, err
	}
	if src.instanceName != in {
		return nil, invalidf("backup.source_table %q is not in the parent's instance %s", b.GetSourceTable(), in)
	}
	if b.GetBackupType() == btapb.Backup_HOT || b.GetHotToStandardTime() != nil {
		return nil, unimplemented("a hot backup", "a backup is a snapshot in the cluster, served by the same servers as the table")
	}
	start := time.Now()
	expire, err := checkExpire(b.GetExpireTime(), start)
	if err != nil {
		return nil, err
	}
	if _, err := a.s.c.Admin().CreateSnapshotExpiring(ctx, src.table, n.id, expire); err != nil {
		return nil, toStatus(err)
	}
	out, err := a.s.backup(ctx, n)
	if err != nil {
		return nil, err
	}
	return a.s.done(n.String()+"/operations/create-"+strconv.FormatInt(start.UnixMicro(), 10),
		&btapb.CreateBackupMetadata{Name: n.String(), SourceTable: src.String(), StartTime: out.GetStartTime(), EndTime: timestamppb.Now()}, out)
}

// GetBackup describes a backup.
func (a *adminServer) GetBackup(ctx context.Context, req *btapb.GetBackupRequest) (*btapb.Backup, error) {
	n, err := a.s.parseBackup("name", req.GetName())
	if err != nil {
		return nil, err
	}
	return a.s.backup(ctx, n)
}

// ListBackups lists the backups of the instance's tables (the snapshots
// of its namespace), by id, a page at a time when page_size is set. The
// cluster may be "-": the instance has one.
func (a *adminServer) ListBackups(ctx context.Context, req *btapb.ListBackupsRequest) (*btapb.ListBackupsResponse, error) {
	in, _, err := a.s.parseCluster("parent", req.GetParent(), true)
	if err != nil {
		return nil, err
	}
	if req.GetFilter() != "" || req.GetOrderBy() != "" {
		return nil, unimplemented("ListBackups with a filter or order_by", "backups are listed by id")
	}
	if req.GetPageSize() < 0 {
		return nil, invalidf("page_size must be >= 0, got %d", req.GetPageSize())
	}
	ns, err := a.s.ns.of(ctx, in)
	if err != nil {
		return nil, err
	}
	all, err := a.s.c.Admin().ListSnapshots(ctx, "")
	if err != nil {
		return nil, toStatus(err)
	}
	var ids []string
	for _, s := range all {
		if cell.InNamespace(s.Table, ns) && s.Name > req.GetPageToken() {
			ids = append(ids, s.Name)
		}
	}
	sort.Strings(ids)
	resp := &btapb.ListBackupsResponse{}
	for i, id := range ids {
		if ps := int(req.GetPageSize()); ps > 0 && i == ps {
			resp.NextPageToken = ids[i-1]
			break
		}
		n := backupName{instanceName: in, cluster: a.s.opts.ClusterID, id: id}
		d, err := a.s.c.Admin().DescribeSnapshot(ctx, id)
		if status.Code(err) == codes.NotFound {
			continue // deleted since the list
		}
		if err != nil {
			return nil, toStatus(err)
		}
		resp.Backups = append(resp.Backups, protoBackup(n, d))
	}
	return resp, nil
}

// UpdateBackup changes a backup's expire time, the one field Bigtable
// lets change that Tabula has.
func (a *adminServer) UpdateBackup(ctx context.Context, req *btapb.UpdateBackupRequest) (*btapb.Backup, error) {
	n, err := a.s.parseBackup("backup.name", req.GetBackup().GetName())
	if err != nil {
		return nil, err
	}
	paths := req.GetUpdateMask().GetPaths()
	if len(paths) == 0 {
		return nil, invalidf("update_mask is required: name the fields of backup to change")
	}
	for _, p := range paths {
		if p != "expire_time" {
			return nil, invalidf("update_mask names %q: of a backup only expire_time can be changed", p)
		}
	}
	cur, err := a.s.backup(ctx, n)
	if err != nil {
		return nil, err
	}
	expire, err := checkExpire(req.GetBackup().GetExpireTime(), cur.GetStartTime().AsTime())
	if err != nil {
		return nil, err
	}
	if _, err := a.s.c.Admin().SetSnapshotExpiry(ctx, n.id, expire); err != nil {
		return nil, toStatus(err)
	}
	return a.s.backup(ctx, n)
}

// DeleteBackup deletes the backup's snapshot (a snapshot a restored
// table still shares files with retires: its name is free at once).
func (a *adminServer) DeleteBackup(ctx context.Context, req *btapb.DeleteBackupRequest) (*emptypb.Empty, error) {
	n, err := a.s.parseBackup("name", req.GetName())
	if err != nil {
		return nil, err
	}
	if _, err := a.s.backup(ctx, n); err != nil {
		return nil, err
	}
	if err := a.s.c.Admin().DeleteSnapshot(ctx, n.id); err != nil {
		return nil, toStatus(err)
	}
	return &emptypb.Empty{}, nil
}

// RestoreTable creates a new table from a backup: a clone of its
// snapshot, which shares the snapshot's files (nothing is copied).
// ALREADY_EXISTS if the table exists: a restore never overwrites.
func (a *adminServer) RestoreTable(ctx context.Context, req *btapb.RestoreTableRequest) (*longrunningpb.Operation, error) {
	in, err := parseInstance("parent", req.GetParent())
	if err != nil {
		return nil, err
	}
	n, err := a.s.parseTable(ctx, "table_id", in.String()+"/tables/"+req.GetTableId())
	if err != nil {
		return nil, err
	}
	if req.GetBackup() == "" {
		return nil, invalidf("backup is required: the name of the backup to restore")
	}
	bn, err := a.s.parseBackup("backup", req.GetBackup())
	if err != nil {
		return nil, err
	}
	b, err := a.s.backup(ctx, bn)
	if err != nil {
		return nil, err
	}
	if b.GetState() != btapb.Backup_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "backup %s is not ready", bn)
	}
	start := timestamppb.Now()
	if _, err := a.s.c.Admin().CloneSnapshot(ctx, bn.id, n.table); err != nil {
		return nil, toStatus(err)
	}
	t, err := a.getTable(ctx, n, btapb.Table_SCHEMA_VIEW)
	if err != nil {
		return nil, err
	}
	end := timestamppb.Now()
	info := &btapb.BackupInfo{Backup: bn.String(), StartTime: b.GetStartTime(), EndTime: b.GetEndTime(), SourceTable: b.GetSourceTable()}
	t.RestoreInfo = &btapb.RestoreInfo{SourceType: btapb.RestoreSourceType_BACKUP, SourceInfo: &btapb.RestoreInfo_BackupInfo{BackupInfo: info}}
	return a.s.done(n.String()+"/operations/restore-"+strconv.FormatInt(start.AsTime().UnixMicro(), 10),
		&btapb.RestoreTableMetadata{Name: n.String(), SourceType: btapb.RestoreSourceType_BACKUP,
			SourceInfo: &btapb.RestoreTableMetadata_BackupInfo{BackupInfo: info},
			Progress:   &btapb.OperationProgress{ProgressPercent: 100, StartTime: start, EndTime: end}}, t)
}
