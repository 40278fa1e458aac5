package client

import (
	"context"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/locator"
)

// AdminClient manages tables and families and inspects the cluster. It
// talks to the masters only; calls a standby cannot answer wait (within
// the context and Options.RetryTimeout) for a leader. It is safe for
// concurrent use.
//
// Its methods fall into concerns, each named by an interface that
// AdminClient implements: TableAdmin (tables and their rows), FamilyAdmin
// (a table's column families), ClusterAdmin (tablets, servers, splits,
// merges, compactions, the balancer) and SecurityAdmin (tokens and
// grants), plus NamespaceAdmin (namespaces), QuotaAdmin (quotas) and
// SnapshotAdmin (snapshots) and BackupAdmin (backup schedules). Code
// that needs only one concern can take that interface, so
// that a reader sees what it may do and a test can hand it a small fake;
// every exported method belongs to exactly one of them
// (TestAdminConcernsCoverEveryMethod).
//
// It stays one type, as HBase's Admin is one interface: every method is a
// call to the same master service, over the same connection, with the
// same retries and the same permission (the Admin role). Cloud Bigtable's
// Go client splits AdminClient (tables) from InstanceAdminClient
// (instances, clusters, app profiles) because those are two services
// over two kinds of resource; a Tabula cluster is its one instance.
type AdminClient struct {
	c *Client
}

// TableAdmin creates, describes, protects and deletes tables and drops
// their rows (tabula table create, list, describe, protect, unprotect,
// delete, drop-rows).
type TableAdmin interface {
	CreateTable(ctx context.Context, name string, fams []families.Family, splitKeys [][]byte) error
	CreateTableWithInfo(ctx context.Context, info TableInfo, splitKeys [][]byte) error
	DeleteTable(ctx context.Context, name string) error
	SetDeletionProtection(ctx context.Context, table string, on bool) error
	ListTables(ctx context.Context) ([]TableInfo, error)
	DescribeTable(ctx context.Context, name string) (TableInfo, error)
	DropRowRange(ctx context.Context, table string, prefix []byte) error
	DropAllRows(ctx context.Context, table string) error
}

// FamilyAdmin adds, changes and deletes a table's column families
// (tabula family add, modify, delete).
type FamilyAdmin interface {
	AddFamily(ctx context.Context, table string, f families.Family) error
	ModifyFamily(ctx context.Context, table string, f families.Family) error
	DeleteFamily(ctx context.Context, table, name string) error
}

// ClusterAdmin inspects and steers where data lives: tablets and servers,
// splits, merges, flushes and compactions, the balancer and the busiest tablets
// (tabula table tablets, split, merge, auto-merge, flush, compact; tabula
// servers, top, balance, balancer, tablet move).
type ClusterAdmin interface {
	Tablets(ctx context.Context, table string) ([]TabletInfo, error)
	Servers(ctx context.Context) ([]ServerInfo, error)
	TopTablets(ctx context.Context, by string, n int) (TopTablets, error)
	SplitTablet(ctx context.Context, table string, row []byte) error
	SplitTabletMidpoint(ctx context.Context, table, tabletID string, row []byte) ([]TabletInfo, error)
	MergeTablets(ctx context.Context, table string, start, end []byte) (TabletInfo, int, error)
	CompactTable(ctx context.Context, table string, major bool) error
	FlushTable(ctx context.Context, table string) error
	SetAutoMerge(ctx context.Context, table string, on bool) error
	Balance(ctx context.Context) (int, error)
	BalancePlan(ctx context.Context, dryRun bool) (int, []PlannedMove, error)
	MoveTablet(ctx context.Context, table, tabletID, serverID string) (TabletInfo, error)
	SetBalancer(ctx context.Context, table string, on bool) error
	Balancer(ctx context.Context) (BalancerStatus, error)
}

// SecurityAdmin issues and revokes tokens and grants, and says who the
// caller is (tabula auth token, grant, revoke, list, whoami).
type SecurityAdmin interface {
	CreateToken(ctx context.Context, principal, description string) (string, TokenInfo, error)
	ListTokens(ctx context.Context, principal string) ([]TokenInfo, error)
	RevokeToken(ctx context.Context, id string) error
	Grant(ctx context.Context, g Grant) error
	Revoke(ctx context.Context, principal, table string) error
	ListGrants(ctx context.Context, principal, table string) ([]Grant, error)
	WhoAmI(ctx context.Context) (Identity, error)
}

var (
	_ TableAdmin    = (*AdminClient)(nil)
	_ FamilyAdmin   = (*AdminClient)(nil)
	_ ClusterAdmin  = (*AdminClient)(nil)
	_ SecurityAdmin = (*AdminClient)(nil)
)

// call runs fn on a master, retrying with backoff while none answers
// other than UNAVAILABLE (no leader elected yet, say).
func (a *AdminClient) call(ctx context.Context, fn func(context.Context, tabulapb.MasterClient) error) error {
	return a.retry(ctx, func(ctx context.Context) error { return a.c.loc.CallMaster(ctx, fn) })
}

// retry runs one round over the masters (attempt) until it is answered
// other than UNAVAILABLE, with backoff.
func (a *AdminClient) retry(ctx context.Context, attempt func(context.Context) error) error {
	r := a.c.newRetrier()
	for {
		err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return contextStatus(ctx, err)
		}
		if !locator.IsUnavailable(err) {
			return err
		}
		if werr := r.wait(ctx, err); werr != nil {
			return werr
		}
	}
}
