package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// namespaceServer serves the Namespaces service (docs/OPERATIONS.md
// "Namespaces") on the master's port. The etcd transactions are meta's
// (meta/namespaces.go): a namespace's deletion and a table's creation in
// it cannot race.
type namespaceServer struct {
	tabulapb.UnimplementedNamespacesServer
	m *Master
}

// defaultNamespace is the record shown for the default namespace, which
// has none in etcd.
func defaultNamespace() *tabulapb.Namespace {
	return &tabulapb.Namespace{Name: cell.DefaultNamespace, Description: "tables named without a namespace prefix"}
}

func checkNamespace(n *tabulapb.Namespace) error {
	if err := cell.ValidateNamespaceName(n.GetName()); err != nil {
		return err
	}
	if n.GetMaxTables() < 0 {
		return cell.Invalidf("max_tables %d is negative: use 0 for no limit", n.GetMaxTables())
	}
	return nil
}

// CreateNamespace creates a namespace (ALREADY_EXISTS if it exists;
// "default" always does).
func (s namespaceServer) CreateNamespace(ctx context.Context, req *tabulapb.CreateNamespaceRequest) (*tabulapb.Namespace, error) {
	n, err := s.createNamespace(ctx, req.GetNamespace())
	return n, toStatus(ctx, err)
}

func (s namespaceServer) createNamespace(ctx context.Context, in *tabulapb.Namespace) (*tabulapb.Namespace, error) {
	if err := checkNamespace(in); err != nil {
		return nil, err
	}
	if in.GetName() == cell.DefaultNamespace {
		return nil, existsf("namespace %s always exists", cell.DefaultNamespace)
	}
	term, err := s.m.lead(ctx)
	if err != nil {
		return nil, err
	}
	n := &tabulapb.Namespace{Name: in.GetName(), MaxTables: in.GetMaxTables(), Description: in.GetDescription(), CreatedMicros: time.Now().UnixMicro()}
	err = meta.CreateNamespace(ctx, s.m.cli, s.m.layout, n, term.guard())
	if errors.Is(err, meta.ErrConflict) {
		if _, _, err := meta.GetNamespace(ctx, s.m.cli, s.m.layout, n.Name); err == nil {
			return nil, existsf("namespace %s already exists", n.Name)
		}
		return nil, fmt.Errorf("%w (leadership lost during CreateNamespace; retry)", ErrNotLeader)
	}
	if err != nil {
		return nil, err
	}
	s.m.log.Info("created namespace", "namespace", n.Name, "max_tables", n.MaxTables)
	return n, nil
}

// UpdateNamespace replaces a namespace's settings (max_tables,
// description).
func (s namespaceServer) UpdateNamespace(ctx context.Context, req *tabulapb.UpdateNamespaceRequest) (*tabulapb.Namespace, error) {
	n, err := s.updateNamespace(ctx, req.GetNamespace())
	return n, toStatus(ctx, err)
}

func (s namespaceServer) updateNamespace(ctx context.Context, in *tabulapb.Namespace) (*tabulapb.Namespace, error) {
	if err := checkNamespace(in); err != nil {
		return nil, err
	}
	if in.GetName() == cell.DefaultNamespace {
		return nil, cell.Invalidf("the default namespace has no settings")
	}
	term, err := s.m.lead(ctx)
	if err != nil {
		return nil, err
	}
	old, rev, err := s.getNamespace(ctx, in.GetName())
	if err != nil {
		return nil, err
	}
	n := &tabulapb.Namespace{Name: old.GetName(), MaxTables: in.GetMaxTables(), Description: in.GetDescription(), CreatedMicros: old.GetCreatedMicros()}
	if err := meta.PutNamespace(ctx, s.m.cli, s.m.layout, n, rev, term.guard()); err != nil {
		return nil, err
	}
	return n, nil
}

func (s namespaceServer) getNamespace(ctx context.Context, name string) (*tabulapb.Namespace, int64, error) {
	n, rev, err := meta.GetNamespace(ctx, s.m.cli, s.m.layout, name)
	if errors.Is(err, meta.ErrNotFound) {
		return nil, 0, notFoundf("namespace %s does not exist (`tabula namespace list` lists them)", name)
	}
	return n, rev, err
}

// ListNamespaces lists "default" and every namespace created, by name.
func (s namespaceServer) ListNamespaces(ctx context.Context, _ *tabulapb.ListNamespacesRequest) (*tabulapb.ListNamespacesResponse, error) {
	nss, bad, err := meta.ListNamespaces(ctx, s.m.cli, s.m.layout)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	for _, b := range bad {
		s.m.log.Warn("skipping an undecodable namespace record", "key", b.Key, "err", b.Err)
	}
	out := &tabulapb.ListNamespacesResponse{}
	done := false
	for _, n := range nss {
		if !done && n.GetName() > cell.DefaultNamespace {
			out.Namespaces, done = append(out.Namespaces, defaultNamespace()), true
		}
		out.Namespaces = append(out.Namespaces, n)
	}
	if !done {
		out.Namespaces = append(out.Namespaces, defaultNamespace())
	}
	return out, nil
}

// DescribeNamespace returns a namespace's settings and its tables.
func (s namespaceServer) DescribeNamespace(ctx context.Context, req *tabulapb.DescribeNamespaceRequest) (*tabulapb.DescribeNamespaceResponse, error) {
	out, err := s.describeNamespace(ctx, req.GetName())
	return out, toStatus(ctx, err)
}

func (s namespaceServer) describeNamespace(ctx context.Context, name string) (*tabulapb.DescribeNamespaceResponse, error) {
	if err := cell.ValidateNamespaceName(name); err != nil {
		return nil, err
	}
	n := defaultNamespace()
	if name != cell.DefaultNamespace {
		var err error
		if n, _, err = s.getNamespace(ctx, name); err != nil {
			return nil, err
		}
	}
	tables, err := meta.NamespaceTables(ctx, s.m.cli, s.m.layout, name)
	if err != nil {
		return nil, err
	}
	return &tabulapb.DescribeNamespaceResponse{Namespace: n, Tables: tables}, nil
}

// DeleteNamespace deletes an empty namespace; with recursive, its tables
// first (each as DeleteTable does: a protected one stops it). Without
// recursive, a namespace holding a table is FAILED_PRECONDITION.
func (s namespaceServer) DeleteNamespace(ctx context.Context, req *tabulapb.DeleteNamespaceRequest) (*tabulapb.DeleteNamespaceResponse, error) {
	out, err := s.deleteNamespace(ctx, req.GetName(), req.GetRecursive())
	return out, toStatus(ctx, err)
}

func (s namespaceServer) deleteNamespace(ctx context.Context, name string, recursive bool) (*tabulapb.DeleteNamespaceResponse, error) {
	if err := cell.ValidateNamespaceName(name); err != nil {
		return nil, err
	}
	if name == cell.DefaultNamespace {
		return nil, fmt.Errorf("%w: the default namespace cannot be deleted", ErrProtected)
	}
	term, err := s.m.lead(ctx)
	if err != nil {
		return nil, err
	}
	out := &tabulapb.DeleteNamespaceResponse{}
	// A table created while the namespace's tables are deleted fails the
	// last transaction (not empty): go round again, a few times.
	for range 5 {
		_, rev, err := s.getNamespace(ctx, name)
		if err != nil {
			return nil, err
		}
		tables, err := meta.NamespaceTables(ctx, s.m.cli, s.m.layout, name)
		if err != nil {
			return nil, err
		}
		if len(tables) > 0 && !recursive {
			return nil, fmt.Errorf("%w: %s holds %d table(s) (%s...): delete them first, or pass --recursive (DeleteNamespaceRequest.recursive) to delete them with it",
				meta.ErrNamespaceNotEmpty, name, len(tables), tables[0])
		}
		for _, t := range tables {
			if err := s.m.deleteTable(ctx, t); err != nil && !errors.Is(err, ErrNotFound) {
				return out, fmt.Errorf("deleting namespace %s: table %s: %w", name, t, err)
			}
			out.DeletedTables = append(out.DeletedTables, t)
		}
		err = meta.DeleteNamespace(ctx, s.m.cli, s.m.layout, name, rev, term.guard())
		if err == nil {
			s.m.log.Info("deleted namespace", "namespace", name, "tables", len(out.DeletedTables))
			return out, nil
		}
		if !errors.Is(err, meta.ErrNamespaceNotEmpty) && !errors.Is(err, meta.ErrConflict) {
			return out, err
		}
	}
	return out, fmt.Errorf("%w: namespace %s kept changing while it was deleted; retry", meta.ErrConflict, name)
}
