package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The master's named transactions on tables/<name> and the table's
// tablets. Each is guarded by the master's term (a LeaderGuard) besides
// its own conditions; a failed guard is ErrConflict, and the caller tells
// a lost race from a lost term by reading again.

// CreateTable writes table's schema and all its tablets in ONE
// transaction, guarded by tables/<name> not existing yet, by the table's
// namespace existing unchanged and, under a max_tables, having room
// (namespaceCmps: ErrNotFound or ErrNamespaceFull before any write), and
// by g. The puts are in order: the schema, then the tablets as given.
func CreateTable(ctx context.Context, kv clientv3.KV, l Layout, table TableRecord, tablets []TabletRecord, g Guard) error {
	return createTable(ctx, kv, l, table, tablets, nil, nil, g)
}

// createTable is CreateTable with more conditions and writes in its
// transaction (a clone's snapshot record: CloneTable).
func createTable(ctx context.Context, kv clientv3.KV, l Layout, table TableRecord, tablets []TabletRecord, moreCmps []clientv3.Cmp, moreOps []clientv3.Op, g Guard) error {
	tk := l.TableKey(table.Schema.GetName())
	nsCmps, err := namespaceCmps(ctx, kv, l, table.Schema.GetName())
	if err != nil {
		return err
	}
	nsCmps = append(nsCmps, moreCmps...)
	ops := append([]clientv3.Op{clientv3.OpPut(tk, EncodeTable(table))}, moreOps...)
	for _, t := range tablets {
		v := EncodeTablet(t)
		ops = append(ops, clientv3.OpPut(l.TabletKey(t.Table, t.ID), v))
		ops = append(ops, mirrorOps(l, nil, &t, v)...)
	}
	resp, err := kv.Txn(ctx).
		If(cmps(append(nsCmps, clientv3.Compare(clientv3.CreateRevision(tk), "=", 0)), g)...).
		Then(ops...).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: creating table %s: %w", table.Schema.GetName(), err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: table %s exists (or the guard failed)", ErrConflict, table.Schema.GetName())
	}
	return nil
}

// DeleteTable deletes tables/<name>, every tablets/<name>/… key and
// their mirrors under assignments/ in ONE transaction, guarded by the
// schema's ModRevision still being rev, by no tablet of the table having
// changed since they were read (the mirrors are deleted per server: a
// prefix assignments/<server>/<name>/ for each server holding one) and by
// g. A tablet that changes in between is read again (up to 5 times).
// Should the table's tablets be held by more servers than one
// transaction may name (etcd's --max-txn-ops, 128), the mirrors of the
// others go in the transactions that follow, each guarded by the table
// not having been created again.
func DeleteTable(ctx context.Context, kv clientv3.KV, l Layout, name string, rev int64, g Guard) error {
	tk, tp := l.TableKey(name), l.TabletsPrefix(name)
	for range 5 {
		resp, err := kv.Get(ctx, tp, clientv3.WithPrefix())
		if err != nil {
			return fmt.Errorf("meta: deleting table %s: %w", name, err)
		}
		seen := map[string]bool{}
		var prefixes []string
		for _, e := range resp.Kvs {
			if t, err := DecodeTablet(e.Value); err == nil && t.Server != "" && !seen[t.Server] {
				seen[t.Server] = true
				prefixes = append(prefixes, l.ServerAssignmentsPrefix(t.Server)+name+"/")
			}
		}
		ops := []clientv3.Op{clientv3.OpDelete(tk), clientv3.OpDelete(tp, clientv3.WithPrefix())}
		n := min(len(prefixes), maxTxnOps-len(ops))
		for _, p := range prefixes[:n] {
			ops = append(ops, clientv3.OpDelete(p, clientv3.WithPrefix()))
		}
		tr, err := kv.Txn(ctx).
			If(cmps([]clientv3.Cmp{
				clientv3.Compare(clientv3.ModRevision(tk), "=", rev),
				clientv3.Compare(clientv3.ModRevision(tp), "<", resp.Header.Revision+1).WithPrefix(),
			}, g)...).
			Then(ops...).
			Else(clientv3.OpGet(tk), clientv3.OpGet(tp, clientv3.WithPrefix(), clientv3.WithMinModRev(resp.Header.Revision+1), clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			return fmt.Errorf("meta: deleting table %s: %w", name, err)
		}
		if !tr.Succeeded {
			table := tr.Responses[0].GetResponseRange().GetKvs()
			if len(table) == 1 && table[0].ModRevision == rev && tr.Responses[1].GetResponseRange().GetCount() > 0 {
				continue // only a tablet changed: read them again
			}
			return fmt.Errorf("%w: table %s changed since revision %d (or the guard failed)", ErrConflict, name, rev)
		}
		return deleteMirrors(ctx, kv, tk, prefixes[n:])
	}
	return fmt.Errorf("%w: the tablets of table %s kept changing while it was deleted", ErrConflict, name)
}

// maxTxnOps is etcd's default --max-txn-ops: the most operations one
// transaction may hold.
const maxTxnOps = 128

// deleteMirrors deletes the mirror prefixes of a table deleted (table key
// tk), maxTxnOps at a time, each transaction guarded by the table not
// having been created again.
func deleteMirrors(ctx context.Context, kv clientv3.KV, tk string, prefixes []string) error {
	for len(prefixes) > 0 {
		n := min(len(prefixes), maxTxnOps)
		var ops []clientv3.Op
		for _, p := range prefixes[:n] {
			ops = append(ops, clientv3.OpDelete(p, clientv3.WithPrefix()))
		}
		prefixes = prefixes[n:]
		if _, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(tk), "=", 0)).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("meta: deleting the assignments of a deleted table: %w", err)
		}
	}
	return nil
}

// PutTable writes table's schema over the one at ModRevision rev, guarded
// by that and by g; it returns the new revision.
func PutTable(ctx context.Context, kv clientv3.KV, l Layout, table TableRecord, rev int64, g Guard) (int64, error) {
	k := l.TableKey(table.Schema.GetName())
	resp, err := kv.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k), "=", rev)}, g)...).
		Then(clientv3.OpPut(k, EncodeTable(table))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("meta: writing the schema of table %s: %w", table.Schema.GetName(), err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: table %s changed since revision %d (or the guard failed)", ErrConflict, table.Schema.GetName(), rev)
	}
	return resp.Header.Revision, nil
}

// BadRecord is a key under the layout whose value did not decode: readers
// that skip such records (and log them) get them back with the rest.
type BadRecord struct {
	Key string
	Err error
}

// ListTables reads every table's schema. Records that do not decode are
// returned in bad, in key order, not as an error.
func ListTables(ctx context.Context, kv clientv3.KV, l Layout) (tables []TableRecord, bad []BadRecord, err error) {
	resp, err := kv.Get(ctx, l.TablesPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("meta: reading tables: %w", err)
	}
	for _, e := range resp.Kvs {
		r, err := DecodeTable(e.Value)
		if err != nil {
			bad = append(bad, BadRecord{Key: string(e.Key), Err: err})
			continue
		}
		tables = append(tables, r)
	}
	return tables, bad, nil
}

// GetTableAndTablets reads a table's schema and its tablets sorted by
// start key in one transaction, so at one revision; ErrNotFound if the
// table does not exist.
func GetTableAndTablets(ctx context.Context, kv clientv3.KV, l Layout, table string) (TableRecord, []VersionedTablet, error) {
	resp, err := kv.Txn(ctx).Then(
		clientv3.OpGet(l.TableKey(table)),
		clientv3.OpGet(l.TabletsPrefix(table), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return TableRecord{}, nil, fmt.Errorf("meta: reading table %s: %w", table, err)
	}
	tkv := resp.Responses[0].GetResponseRange().Kvs
	if len(tkv) == 0 {
		return TableRecord{}, nil, fmt.Errorf("%w: table %s", ErrNotFound, table)
	}
	rec, err := DecodeTable(tkv[0].Value)
	if err != nil {
		return TableRecord{}, nil, err
	}
	var tablets []VersionedTablet
	for _, e := range resp.Responses[1].GetResponseRange().Kvs {
		t, err := DecodeTablet(e.Value)
		if err != nil {
			return TableRecord{}, nil, fmt.Errorf("%s: %w", e.Key, err)
		}
		tablets = append(tablets, VersionedTablet{TabletRecord: t, ModRevision: e.ModRevision})
	}
	sortVersioned(tablets)
	return rec, tablets, nil
}
