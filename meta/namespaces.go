package meta

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// Namespaces (docs/CONTRACTS.md "etcd layout"): namespaces/<ns> holds a
// namespace's record (protojson of tabulapb.Namespace); its tables are
// tables/<ns>:<name>. The default namespace has no record and its tables
// no prefix, so a cluster from before namespaces needs no migration.
// Every transaction that creates a table in a namespace compares the
// namespace's record, and the one that deletes a namespace compares that
// no table key has its prefix: the two cannot race.

var (
	// ErrNamespaceNotEmpty: a namespace still holding tables was to be
	// deleted.
	ErrNamespaceNotEmpty = errors.New("meta: namespace not empty")
	// ErrNamespaceFull: a table creation would pass the namespace's
	// max_tables.
	ErrNamespaceFull = errors.New("meta: namespace full")
)

// EncodeNamespace returns the value stored under NamespaceKey.
func EncodeNamespace(n *tabulapb.Namespace) string {
	b, err := protojson.Marshal(n)
	if err != nil {
		panic(fmt.Sprintf("meta: encoding namespace: %v", err)) // a valid message always marshals
	}
	return string(b)
}

// DecodeNamespace parses a value stored under NamespaceKey.
func DecodeNamespace(b []byte) (*tabulapb.Namespace, error) {
	n := &tabulapb.Namespace{}
	if err := protojson.Unmarshal(b, n); err != nil {
		return nil, fmt.Errorf("%w: namespace: %v", ErrCorrupt, err)
	}
	if cell.ValidateNamespaceName(n.GetName()) != nil {
		return nil, fmt.Errorf("%w: namespace record with name %q", ErrCorrupt, n.GetName())
	}
	return n, nil
}

// CreateNamespace writes n's record, guarded by it not existing and by g.
// ErrConflict if it exists (or the guard failed).
func CreateNamespace(ctx context.Context, kv clientv3.KV, l Layout, n *tabulapb.Namespace, g Guard) error {
	k := l.NamespaceKey(n.GetName())
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(k), "=", 0)}, g)...).
		Then(clientv3.OpPut(k, EncodeNamespace(n))).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: creating namespace %s: %w", n.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: namespace %s exists (or the guard failed)", ErrConflict, n.GetName())
	}
	return nil
}

// PutNamespace writes n over the record at ModRevision rev, guarded by
// that and by g.
func PutNamespace(ctx context.Context, kv clientv3.KV, l Layout, n *tabulapb.Namespace, rev int64, g Guard) error {
	k := l.NamespaceKey(n.GetName())
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g)...).
		Then(clientv3.OpPut(k, EncodeNamespace(n))).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: writing namespace %s: %w", n.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: namespace %s changed since revision %d (or the guard failed)", ErrConflict, n.GetName(), rev)
	}
	return nil
}

// GetNamespace reads namespace ns's record and its ModRevision;
// ErrNotFound if it does not exist.
func GetNamespace(ctx context.Context, kv clientv3.KV, l Layout, ns string) (*tabulapb.Namespace, int64, error) {
	resp, err := kv.Get(ctx, l.NamespaceKey(ns))
	if err != nil {
		return nil, 0, fmt.Errorf("meta: reading namespace %s: %w", ns, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, fmt.Errorf("%w: namespace %s", ErrNotFound, ns)
	}
	n, err := DecodeNamespace(resp.Kvs[0].Value)
	return n, resp.Kvs[0].ModRevision, err
}

// ListNamespaces reads every namespace's record (not the default one's:
// it has none), in name order; undecodable ones are returned in bad.
func ListNamespaces(ctx context.Context, kv clientv3.KV, l Layout) (out []*tabulapb.Namespace, bad []BadRecord, err error) {
	resp, err := kv.Get(ctx, l.NamespacesPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("meta: reading namespaces: %w", err)
	}
	for _, e := range resp.Kvs {
		n, err := DecodeNamespace(e.Value)
		if err != nil {
			bad = append(bad, BadRecord{Key: string(e.Key), Err: err})
			continue
		}
		out = append(out, n)
	}
	return out, bad, nil
}

// NamespaceTables lists the names of namespace ns's tables, sorted
// (etcd's key order).
func NamespaceTables(ctx context.Context, kv clientv3.KV, l Layout, ns string) ([]string, error) {
	prefix := l.TablesPrefix()
	if ns != cell.DefaultNamespace {
		prefix = l.NamespaceTablesPrefix(ns)
	}
	resp, err := kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("meta: reading the tables of namespace %s: %w", ns, err)
	}
	var out []string
	for _, e := range resp.Kvs {
		if name, ok := l.TableFromKey(string(e.Key)); ok && cell.InNamespace(name, ns) {
			out = append(out, name)
		}
	}
	return out, nil
}

// DeleteNamespace deletes namespace ns's record, guarded by its
// ModRevision still being rev, by no table key having the namespace's
// prefix (in the same transaction: a table created meanwhile fails it)
// and by g. ErrNamespaceNotEmpty if a table is there; ErrConflict if the
// record changed or the guard failed.
func DeleteNamespace(ctx context.Context, kv clientv3.KV, l Layout, ns string, rev int64, g Guard) error {
	k, tp := l.NamespaceKey(ns), l.NamespaceTablesPrefix(ns)
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(k), "=", rev),
			clientv3.Compare(clientv3.CreateRevision(tp), "=", 0).WithPrefix(),
		}, g)...).
		Then(clientv3.OpDelete(k)).
		Else(clientv3.OpGet(tp, clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: deleting namespace %s: %w", ns, err)
	}
	if !resp.Succeeded {
		if n := resp.Responses[0].GetResponseRange().GetCount(); n > 0 {
			return fmt.Errorf("%w: namespace %s holds %d tables", ErrNamespaceNotEmpty, ns, n)
		}
		return fmt.Errorf("%w: namespace %s changed since revision %d (or the guard failed)", ErrConflict, ns, rev)
	}
	return nil
}

// namespaceCmps are the conditions of creating table in its namespace
// (none in the default namespace): the namespace's record exists unchanged
// and, with a max_tables, no table of it was created since the count was
// taken. ErrNotFound if the namespace does not exist, ErrNamespaceFull if
// it holds max_tables already.
func namespaceCmps(ctx context.Context, kv clientv3.KV, l Layout, table string) ([]clientv3.Cmp, error) {
	ns, _ := cell.SplitTableName(table)
	if ns == cell.DefaultNamespace {
		return nil, nil
	}
	k, tp := l.NamespaceKey(ns), l.NamespaceTablesPrefix(ns)
	resp, err := kv.Txn(ctx).Then(clientv3.OpGet(k), clientv3.OpGet(tp, clientv3.WithPrefix(), clientv3.WithCountOnly())).Commit()
	if err != nil {
		return nil, fmt.Errorf("meta: reading namespace %s: %w", ns, err)
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return nil, fmt.Errorf("%w: namespace %s does not exist; create it first with `tabula namespace create %s`", ErrNotFound, ns, ns)
	}
	n, err := DecodeNamespace(kvs[0].Value)
	if err != nil {
		return nil, err
	}
	out := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", kvs[0].ModRevision)}
	if max := int64(n.GetMaxTables()); max > 0 {
		if count := resp.Responses[1].GetResponseRange().GetCount(); count >= max {
			return nil, fmt.Errorf("%w: namespace %s holds %d tables, its max_tables is %d: delete one or raise the limit with `tabula namespace update %s --max-tables N`",
				ErrNamespaceFull, ns, count, max, ns)
		}
		out = append(out, clientv3.Compare(clientv3.CreateRevision(tp), "<", resp.Header.Revision+1).WithPrefix())
	}
	return out, nil
}
