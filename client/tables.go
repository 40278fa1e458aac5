package client

import (
	"context"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file holds the AdminClient's TableAdmin and FamilyAdmin methods.

// TableInfo describes a table.
type TableInfo struct {
	Name     string
	Families []families.Family
	// SplitThreshold is the size in bytes past which a tablet splits; 0
	// means the cluster default.
	SplitThreshold int64
	// SplitThresholdInForce is SplitThreshold, or the cluster's default
	// when that is 0; filled by DescribeTable only.
	SplitThresholdInForce int64
	// State is "enabled" or "deleting".
	State string
	// AutoMergeDisabled keeps the automatic merge away from the table's
	// tablets (docs/OPERATIONS.md "Merges").
	AutoMergeDisabled bool
	// BalancerDisabled keeps the automatic balancer away from the table's
	// tablets (docs/OPERATIONS.md "Balancing"); read-only here: switch it
	// with SetBalancer.
	BalancerDisabled bool
	// DeletionProtection, set, refuses deleting the table or any of its
	// families (FAILED_PRECONDITION) until SetDeletionProtection clears
	// it (docs/OPERATIONS.md "Deletion protection"). CreateTableWithInfo
	// takes it.
	DeletionProtection bool
	// UserSplitKeys are the tablet boundaries users asked for (create
	// splits, SplitTablet rows), which the automatic merge keeps; read-only.
	UserSplitKeys [][]byte
	// Tablets are filled by DescribeTable only.
	Tablets []TabletInfo
}

// CreateTable creates table name with the given families, pre-split at
// splitKeys (len(splitKeys)+1 tablets).
func (a *AdminClient) CreateTable(ctx context.Context, name string, fams []families.Family, splitKeys [][]byte) error {
	return a.CreateTableWithInfo(ctx, TableInfo{Name: name, Families: fams}, splitKeys)
}

// CreateTableWithInfo creates a table from info's Name, Families,
// SplitThreshold, AutoMergeDisabled and DeletionProtection, pre-split at
// splitKeys.
func (a *AdminClient) CreateTableWithInfo(ctx context.Context, info TableInfo, splitKeys [][]byte) error {
	info.Name = cell.CanonicalTableName(info.Name) // "default:T" is T
	if err := cell.ValidateTableName(info.Name); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	for i := range info.Families {
		if err := info.Families[i].Validate(); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
	}
	req := &tabulapb.CreateTableRequest{
		Schema: &tabulapb.TableSchema{Name: info.Name, Families: convert.FamiliesToProto(info.Families),
			SplitThresholdBytes: info.SplitThreshold, AutoMergeDisabled: info.AutoMergeDisabled,
			DeletionProtection: info.DeletionProtection},
		SplitKeys: splitKeys,
	}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.CreateTable(ctx, req)
		return err
	})
}

// DeleteTable deletes a table and its data; FAILED_PRECONDITION while the
// table has deletion protection.
func (a *AdminClient) DeleteTable(ctx context.Context, name string) error {
	name = cell.CanonicalTableName(name) // "default:T" is T
	defer a.c.loc.EvictTable(name)
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DeleteTable(ctx, &tabulapb.DeleteTableRequest{Table: name})
		return err
	})
}

// ListTables lists every table (without tablets).
func (a *AdminClient) ListTables(ctx context.Context) ([]TableInfo, error) {
	var resp *tabulapb.ListTablesResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.ListTables(ctx, &tabulapb.ListTablesRequest{})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]TableInfo, 0, len(resp.GetTables()))
	for _, s := range resp.GetTables() {
		ti, err := tableInfo(s)
		if err != nil {
			return nil, err
		}
		out = append(out, ti)
	}
	return out, nil
}

// DescribeTable returns a table's schema and tablets (with their sizes
// and load from the leader's latest load report).
func (a *AdminClient) DescribeTable(ctx context.Context, name string) (TableInfo, error) {
	name = cell.CanonicalTableName(name) // "default:T" is T
	var resp *tabulapb.DescribeTableResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: name})
		return err
	})
	if err != nil {
		return TableInfo{}, err
	}
	ti, err := tableInfo(resp.GetSchema())
	if err != nil {
		return TableInfo{}, err
	}
	ti.Tablets = tabletInfos(resp.GetTablets())
	ti.SplitThresholdInForce = resp.GetSplitThresholdBytes()
	return ti, nil
}

func tableInfo(s *tabulapb.TableSchema) (TableInfo, error) {
	fams, err := convert.FamiliesFromProto(s.GetFamilies())
	if err != nil {
		return TableInfo{}, status.Errorf(codes.Internal, "client: master sent a bad schema for %s: %v", s.GetName(), err)
	}
	return TableInfo{Name: s.GetName(), Families: fams, SplitThreshold: s.GetSplitThresholdBytes(), State: s.GetState(),
		AutoMergeDisabled: s.GetAutoMergeDisabled(), BalancerDisabled: s.GetBalancerDisabled(), UserSplitKeys: s.GetUserSplitKeys(),
		DeletionProtection: s.GetDeletionProtection()}, nil
}

// SetDeletionProtection sets (on) or clears the table's deletion
// protection: while set, DeleteTable and DeleteFamily of the table answer
// FAILED_PRECONDITION, by every API (docs/OPERATIONS.md "Deletion
// protection"). Rows can still be deleted.
func (a *AdminClient) SetDeletionProtection(ctx context.Context, table string, on bool) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.SetDeletionProtection(ctx, &tabulapb.SetDeletionProtectionRequest{Table: table, Protected: on})
		return err
	})
}

// AddFamily adds family f to table.
func (a *AdminClient) AddFamily(ctx context.Context, table string, f families.Family) error {
	return a.familyCall(ctx, table, f, tabulapb.MasterClient.AddFamily)
}

// ModifyFamily replaces the settings of table's family f.Name with f's.
func (a *AdminClient) ModifyFamily(ctx context.Context, table string, f families.Family) error {
	return a.familyCall(ctx, table, f, tabulapb.MasterClient.ModifyFamily)
}

type familyRPC = func(tabulapb.MasterClient, context.Context, *tabulapb.FamilyRequest, ...grpc.CallOption) (*tabulapb.TableSchema, error)

func (a *AdminClient) familyCall(ctx context.Context, table string, f families.Family, rpc familyRPC) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	if err := f.Validate(); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	req := &tabulapb.FamilyRequest{Table: table, Family: convert.FamilyToProto(f)}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := rpc(m, ctx, req)
		return err
	})
}

// DeleteFamily deletes table's family name and its data;
// FAILED_PRECONDITION while the table has deletion protection.
func (a *AdminClient) DeleteFamily(ctx context.Context, table, name string) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DeleteFamily(ctx, &tabulapb.DeleteFamilyRequest{Table: table, Family: name})
		return err
	})
}

// DropRowRange deletes every row of table whose key starts with prefix
// (not empty): each cell written before the call is gone once it returns,
// also after crashes, splits and moves; writes made after it returns stay.
// Writes racing with it may survive or not, each row whole. The tablets
// drop whole SSTables rather than deleting cell by cell, so it is fast
// whatever the rows hold. It is an admin call (the Admin role on the
// table) and cannot be undone.
//
// An UNAVAILABLE answer (some tablet could not be reached in time) is
// retried like other admin calls; if it is returned, part of the range may
// have been dropped: calling again is safe.
func (a *AdminClient) DropRowRange(ctx context.Context, table string, prefix []byte) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	if len(prefix) == 0 {
		return invalid("DropRowRange: the prefix is empty; to drop every row call DropAllRows")
	}
	return a.dropRows(ctx, &tabulapb.DropRowRangeRequest{Table: table, Target: &tabulapb.DropRowRangeRequest_RowKeyPrefix{RowKeyPrefix: prefix}})
}

// DropAllRows deletes every row of table, keeping the table and its
// families, as DropRowRange does for a prefix.
func (a *AdminClient) DropAllRows(ctx context.Context, table string) error {
	table = cell.CanonicalTableName(table) // "default:T" is T
	return a.dropRows(ctx, &tabulapb.DropRowRangeRequest{Table: table, Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{DeleteAllDataFromTable: true}})
}

func (a *AdminClient) dropRows(ctx context.Context, req *tabulapb.DropRowRangeRequest) error {
	if err := cell.ValidateTableName(req.GetTable()); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.DropRowRange(ctx, req)
		return err
	})
}
