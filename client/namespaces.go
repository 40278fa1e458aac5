package client

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// NamespaceAdmin creates, lists, describes, changes and deletes
// namespaces (tabula namespace create, list, describe, update, delete;
// docs/OPERATIONS.md "Namespaces"). A table "NS:NAME" is in namespace NS;
// a table named without a colon (or "default:NAME") in "default".
type NamespaceAdmin interface {
	CreateNamespace(ctx context.Context, ns NamespaceInfo) error
	UpdateNamespace(ctx context.Context, ns NamespaceInfo) error
	DeleteNamespace(ctx context.Context, name string, recursive bool) (deletedTables []string, err error)
	ListNamespaces(ctx context.Context) ([]NamespaceInfo, error)
	DescribeNamespace(ctx context.Context, name string) (NamespaceInfo, error)
}

var _ NamespaceAdmin = (*AdminClient)(nil)

// NamespaceInfo describes a namespace.
type NamespaceInfo struct {
	Name string
	// MaxTables limits how many tables the namespace holds (0: none).
	MaxTables   int
	Description string
	Created     time.Time
	// Tables are the namespace's tables, full names, filled by
	// DescribeNamespace only.
	Tables []string
}

func namespaceInfo(n *tabulapb.Namespace) NamespaceInfo {
	ni := NamespaceInfo{Name: n.GetName(), MaxTables: int(n.GetMaxTables()), Description: n.GetDescription()}
	if n.GetCreatedMicros() != 0 {
		ni.Created = time.UnixMicro(n.GetCreatedMicros())
	}
	return ni
}

func (ni NamespaceInfo) proto() (*tabulapb.Namespace, error) {
	if err := cell.ValidateNamespaceName(ni.Name); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &tabulapb.Namespace{Name: ni.Name, MaxTables: int32(ni.MaxTables), Description: ni.Description}, nil
}

// callNamespaces runs fn on a master's Namespaces service, retrying as
// call does.
func (a *AdminClient) callNamespaces(ctx context.Context, fn func(context.Context, tabulapb.NamespacesClient) error) error {
	return a.retry(ctx, func(ctx context.Context) error {
		return a.c.loc.CallMasterConn(ctx, func(ctx context.Context, cc grpc.ClientConnInterface) error {
			return fn(ctx, tabulapb.NewNamespacesClient(cc))
		})
	})
}

// CreateNamespace creates a namespace; ALREADY_EXISTS if it exists.
func (a *AdminClient) CreateNamespace(ctx context.Context, ns NamespaceInfo) error {
	p, err := ns.proto()
	if err != nil {
		return err
	}
	return a.callNamespaces(ctx, func(ctx context.Context, c tabulapb.NamespacesClient) error {
		_, err := c.CreateNamespace(ctx, &tabulapb.CreateNamespaceRequest{Namespace: p})
		return err
	})
}

// UpdateNamespace replaces a namespace's MaxTables and Description.
func (a *AdminClient) UpdateNamespace(ctx context.Context, ns NamespaceInfo) error {
	p, err := ns.proto()
	if err != nil {
		return err
	}
	return a.callNamespaces(ctx, func(ctx context.Context, c tabulapb.NamespacesClient) error {
		_, err := c.UpdateNamespace(ctx, &tabulapb.UpdateNamespaceRequest{Namespace: p})
		return err
	})
}

// DeleteNamespace deletes a namespace: FAILED_PRECONDITION while it holds
// tables, unless recursive, which deletes them (and their data) first and
// returns their names.
func (a *AdminClient) DeleteNamespace(ctx context.Context, name string, recursive bool) ([]string, error) {
	var resp *tabulapb.DeleteNamespaceResponse
	err := a.callNamespaces(ctx, func(ctx context.Context, c tabulapb.NamespacesClient) (err error) {
		resp, err = c.DeleteNamespace(ctx, &tabulapb.DeleteNamespaceRequest{Name: name, Recursive: recursive})
		return err
	})
	for _, t := range resp.GetDeletedTables() {
		a.c.loc.EvictTable(t)
	}
	return resp.GetDeletedTables(), err
}

// ListNamespaces lists every namespace, "default" included, by name.
func (a *AdminClient) ListNamespaces(ctx context.Context) ([]NamespaceInfo, error) {
	var resp *tabulapb.ListNamespacesResponse
	err := a.callNamespaces(ctx, func(ctx context.Context, c tabulapb.NamespacesClient) (err error) {
		resp, err = c.ListNamespaces(ctx, &tabulapb.ListNamespacesRequest{})
		return err
	})
	var out []NamespaceInfo
	for _, n := range resp.GetNamespaces() {
		out = append(out, namespaceInfo(n))
	}
	return out, err
}

// DescribeNamespace returns a namespace's settings and tables; NOT_FOUND
// if it does not exist.
func (a *AdminClient) DescribeNamespace(ctx context.Context, name string) (NamespaceInfo, error) {
	var resp *tabulapb.DescribeNamespaceResponse
	err := a.callNamespaces(ctx, func(ctx context.Context, c tabulapb.NamespacesClient) (err error) {
		resp, err = c.DescribeNamespace(ctx, &tabulapb.DescribeNamespaceRequest{Name: name})
		return err
	})
	if err != nil {
		return NamespaceInfo{}, err
	}
	ni := namespaceInfo(resp.GetNamespace())
	ni.Tables = resp.GetTables()
	return ni, nil
}
