package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxReadAssignments is the most tablets GetTabletsAndTables reads in one
// request: one read per tablet and one per table of them stays within
// etcd's default --max-txn-ops of 128.
const MaxReadAssignments = 64

// TabletName names one tablet of GetTabletsAndTables.
type TabletName struct{ Table, ID string }

// TableRead is what GetTabletsAndTables read of one table.
type TableRead struct {
	// Table is the table's record, read and decoded only when its
	// ModRevision was not the one the caller knew (Changed).
	Table TableRecord
	// Rev is the table record's ModRevision at the read; 0 when the
	// table does not exist.
	Rev     int64
	Changed bool
	// Err is set when the record does not decode.
	Err error
}

// TabletsAndTables is what GetTabletsAndTables read, all at one revision.
type TabletsAndTables struct {
	// Tablets are the tablets' records in the order asked; ModRevision 0
	// for a tablet that does not exist.
	Tablets []VersionedTablet
	// Errs holds, in the same order, the error of a record that does not
	// decode (nil for the others): it fails that tablet alone.
	Errs []error
	// Tables holds every table of the tablets asked for.
	Tables map[string]TableRead
}

// GetTabletsAndTables is GetTabletAndTable for many tablets in one
// request, at one revision (a tablet server loading a batch of tablets:
// docs/OWNERSHIP.md "Loads in batches"). known holds the ModRevision of
// each table record the caller already has: while every one of them is
// unchanged, those tables are not read again; when one changed, every
// table of the batch is read (rare: a schema change). A table that does
// not exist is answered with Rev 0, not an error: its tablets fail, the
// others load. At most MaxReadAssignments tablets.
func GetTabletsAndTables(ctx context.Context, cli clientv3.KV, l Layout, names []TabletName, known map[string]int64) (TabletsAndTables, error) {
	if len(names) == 0 || len(names) > MaxReadAssignments {
		return TabletsAndTables{}, fmt.Errorf("meta: reading %d tablets in one request: 1 to %d", len(names), MaxReadAssignments)
	}
	var tables []string
	seen := map[string]bool{}
	var thenOps, elseOps []clientv3.Op
	for _, n := range names {
		op := clientv3.OpGet(l.TabletKey(n.Table, n.ID))
		thenOps, elseOps = append(thenOps, op), append(elseOps, op)
		if !seen[n.Table] {
			seen[n.Table] = true
			tables = append(tables, n.Table)
		}
	}
	var cmps []clientv3.Cmp
	for _, t := range tables {
		sk := l.TableKey(t)
		elseOps = append(elseOps, clientv3.OpGet(sk))
		if rev := known[t]; rev > 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(sk), "=", rev))
			thenOps = append(thenOps, clientv3.OpGet(sk, clientv3.WithKeysOnly()))
		} else {
			thenOps = append(thenOps, clientv3.OpGet(sk))
		}
	}
	resp, err := cli.Txn(ctx).If(cmps...).Then(thenOps...).Else(elseOps...).Commit()
	if err != nil {
		return TabletsAndTables{}, fmt.Errorf("meta: reading %d tablets and their tables: %w", len(names), err)
	}
	if len(resp.Responses) != len(names)+len(tables) {
		return TabletsAndTables{}, fmt.Errorf("meta: reading %d tablets and their tables: %d answers to %d reads", len(names), len(resp.Responses), len(names)+len(tables))
	}
	out := TabletsAndTables{Tablets: make([]VersionedTablet, len(names)), Errs: make([]error, len(names)), Tables: make(map[string]TableRead, len(tables))}
	for i := range names {
		kvs := resp.Responses[i].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue
		}
		t, err := DecodeTablet(kvs[0].Value)
		if err != nil {
			out.Errs[i] = err
			continue
		}
		out.Tablets[i] = VersionedTablet{TabletRecord: t, ModRevision: kvs[0].ModRevision}
	}
	for j, name := range tables {
		kvs := resp.Responses[len(names)+j].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			out.Tables[name] = TableRead{Changed: true}
			continue
		}
		r := TableRead{Rev: kvs[0].ModRevision, Changed: !resp.Succeeded || known[name] == 0}
		if r.Changed {
			r.Table, r.Err = DecodeTable(kvs[0].Value)
		}
		out.Tables[name] = r
	}
	return out, nil
}
