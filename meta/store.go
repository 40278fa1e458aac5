package meta

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store is what Tabula uses of etcd: keys and transactions, leases and
// watches. *clientv3.Client implements it; tests wrap it to inject faults
// (meta/faultstore). The functions below need only its KV part.
type Store interface {
	clientv3.KV
	clientv3.Lease
	clientv3.Watcher
}

var _ Store = (*clientv3.Client)(nil)

// VersionedTablet is a tablet record with the ModRevision of its key, the
// guard of every later update.
type VersionedTablet struct {
	TabletRecord
	ModRevision int64
}

// GetTablets reads every tablet of table, sorted by start key, and the
// etcd revision of the read.
func GetTablets(ctx context.Context, cli clientv3.KV, l Layout, table string) ([]VersionedTablet, int64, error) {
	resp, err := cli.Get(ctx, l.TabletsPrefix(table), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("meta: reading the tablets of table %s: %w", table, err)
	}
	out := make([]VersionedTablet, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		t, err := DecodeTablet(kv.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", kv.Key, err)
		}
		out = append(out, VersionedTablet{TabletRecord: t, ModRevision: kv.ModRevision})
	}
	sortVersioned(out)
	return out, resp.Header.Revision, nil
}

// GetTablet reads one tablet; ErrNotFound if it does not exist.
func GetTablet(ctx context.Context, cli clientv3.KV, l Layout, table, id string) (VersionedTablet, error) {
	resp, err := cli.Get(ctx, l.TabletKey(table, id))
	if err != nil {
		return VersionedTablet{}, fmt.Errorf("meta: reading tablet %s/%s: %w", table, id, err)
	}
	if len(resp.Kvs) == 0 {
		return VersionedTablet{}, fmt.Errorf("%w: tablet %s/%s", ErrNotFound, table, id)
	}
	t, err := DecodeTablet(resp.Kvs[0].Value)
	if err != nil {
		return VersionedTablet{}, err
	}
	return VersionedTablet{TabletRecord: t, ModRevision: resp.Kvs[0].ModRevision}, nil
}

// TabletAndTable is what GetTabletAndTable read: a tablet's record and,
// at the same revision, its table's.
type TabletAndTable struct {
	// Tablet is the tablet's record; ModRevision 0 (as in etcd) if it
	// does not exist.
	Tablet VersionedTablet
	// Table is the table's record, read and decoded only when its
	// ModRevision was not the one the caller knew (Changed); the zero
	// record otherwise.
	Table TableRecord
	// TableRev is the table record's ModRevision at the read.
	TableRev int64
	// Changed says Table was read: the caller's copy, if any, is stale.
	Changed bool
}

// GetTabletAndTable reads tablet table/id and its table's schema in one
// request, at one revision. knownTableRev is the ModRevision of the table
// record the caller already holds (0: none): while the record still has
// it, the table is not read again (a protojson decode per read), and the
// caller's copy is the schema etcd holds at the tablet record's revision.
// ErrNotFound if the table does not exist.
func GetTabletAndTable(ctx context.Context, cli clientv3.KV, l Layout, table, id string, knownTableRev int64) (TabletAndTable, error) {
	tk, sk := l.TabletKey(table, id), l.TableKey(table)
	both := []clientv3.Op{clientv3.OpGet(tk), clientv3.OpGet(sk)}
	txn := cli.Txn(ctx)
	if knownTableRev > 0 {
		txn = txn.If(clientv3.Compare(clientv3.ModRevision(sk), "=", knownTableRev)).
			Then(clientv3.OpGet(tk), clientv3.OpGet(sk, clientv3.WithKeysOnly())).Else(both...)
	} else {
		txn = txn.Then(both...)
	}
	resp, err := txn.Commit()
	if err != nil {
		return TabletAndTable{}, fmt.Errorf("meta: reading tablet %s/%s and its table: %w", table, id, err)
	}
	if len(resp.Responses) != 2 {
		return TabletAndTable{}, fmt.Errorf("meta: reading tablet %s/%s and its table: %d answers to 2 reads", table, id, len(resp.Responses))
	}
	tr, sr := resp.Responses[0].GetResponseRange(), resp.Responses[1].GetResponseRange()
	if len(sr.GetKvs()) == 0 {
		return TabletAndTable{}, fmt.Errorf("%w: table %s", ErrNotFound, table)
	}
	out := TabletAndTable{TableRev: sr.Kvs[0].ModRevision, Changed: !resp.Succeeded || knownTableRev == 0}
	if len(tr.GetKvs()) > 0 {
		t, err := DecodeTablet(tr.Kvs[0].Value)
		if err != nil {
			return TabletAndTable{}, err
		}
		out.Tablet = VersionedTablet{TabletRecord: t, ModRevision: tr.Kvs[0].ModRevision}
	}
	if out.Changed {
		var err error
		if out.Table, err = DecodeTable(sr.Kvs[0].Value); err != nil {
			return TabletAndTable{}, err
		}
	}
	return out, nil
}

// GetTable reads one table's schema; ErrNotFound if it does not exist.
func GetTable(ctx context.Context, cli clientv3.KV, l Layout, name string) (TableRecord, int64, error) {
	resp, err := cli.Get(ctx, l.TableKey(name))
	if err != nil {
		return TableRecord{}, 0, fmt.Errorf("meta: reading table %s: %w", name, err)
	}
	if len(resp.Kvs) == 0 {
		return TableRecord{}, 0, fmt.Errorf("%w: table %s", ErrNotFound, name)
	}
	t, err := DecodeTable(resp.Kvs[0].Value)
	if err != nil {
		return TableRecord{}, 0, err
	}
	return t, resp.Kvs[0].ModRevision, nil
}

// GetServers reads every live server's record; a record that does not
// decode fails the read (ListServers skips it instead).
func GetServers(ctx context.Context, cli clientv3.KV, l Layout) ([]ServerRecord, error) {
	var bad error
	out, err := ListServers(ctx, cli, l, func(key string, err error) {
		if bad == nil {
			bad = fmt.Errorf("%s: %w", key, err)
		}
	})
	if err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// ListServers reads every live server's record, skipping (and reporting
// to bad, which may be nil) the records that do not decode, so that one bad
// record does not hide every server.
func ListServers(ctx context.Context, cli clientv3.KV, l Layout, bad func(key string, err error)) ([]ServerRecord, error) {
	resp, err := cli.Get(ctx, l.ServersPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("meta: reading servers: %w", err)
	}
	out := make([]ServerRecord, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		s, err := DecodeServer(kv.Value)
		if err != nil {
			if bad != nil {
				bad(string(kv.Key), err)
			}
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// GetServer reads one server's record and the revision of the read;
// ErrNotFound if it is not registered.
func GetServer(ctx context.Context, cli clientv3.KV, l Layout, id string) (ServerRecord, int64, error) {
	resp, err := cli.Get(ctx, l.ServerKey(id))
	if err != nil {
		return ServerRecord{}, 0, fmt.Errorf("meta: reading server %s: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return ServerRecord{}, 0, fmt.Errorf("%w: server %s", ErrNotFound, id)
	}
	s, err := DecodeServer(resp.Kvs[0].Value)
	if err != nil {
		return ServerRecord{}, 0, err
	}
	return s, resp.Header.Revision, nil
}

// ListAllTablets reads the tablets of every table in key order (by table,
// then id). Records that do not decode are returned in bad, not as an
// error.
func ListAllTablets(ctx context.Context, cli clientv3.KV, l Layout) (tablets []VersionedTablet, bad []BadRecord, err error) {
	resp, err := cli.Get(ctx, l.AllTabletsPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil, nil, fmt.Errorf("meta: reading tablets: %w", err)
	}
	for _, kv := range resp.Kvs {
		t, err := DecodeTablet(kv.Value)
		if err != nil {
			bad = append(bad, BadRecord{Key: string(kv.Key), Err: err})
			continue
		}
		tablets = append(tablets, VersionedTablet{TabletRecord: t, ModRevision: kv.ModRevision})
	}
	return tablets, bad, nil
}

// Update writes next over cur in one transaction guarded by cur's
// ModRevision and by any extra guards (the master adds its leadership key),
// with the mirrors under assignments/ kept in step (assignments.go);
// ErrConflict if a guard fails, e.g. the key changed (or vanished) since it
// was read. It returns next with its new ModRevision.
func Update(ctx context.Context, cli clientv3.KV, l Layout, cur VersionedTablet, next TabletRecord, guards ...Guard) (VersionedTablet, error) {
	if next.Table != cur.Table || next.ID != cur.ID {
		return VersionedTablet{}, fmt.Errorf("meta: update of tablet %s/%s names %s/%s", cur.Table, cur.ID, next.Table, next.ID)
	}
	key, value := l.TabletKey(cur.Table, cur.ID), EncodeTablet(next)
	ops := append([]clientv3.Op{clientv3.OpPut(key, value)}, mirrorOps(l, &cur.TabletRecord, &next, value)...)
	resp, err := cli.Txn(ctx).
		If(cmps([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision)}, guards...)...).
		Then(ops...).
		Commit()
	if err != nil {
		return VersionedTablet{}, fmt.Errorf("meta: updating tablet %s/%s: %w", cur.Table, cur.ID, err)
	}
	if !resp.Succeeded {
		return VersionedTablet{}, fmt.Errorf("%w: tablet %s/%s changed since revision %d", ErrConflict, cur.Table, cur.ID, cur.ModRevision)
	}
	return VersionedTablet{TabletRecord: next, ModRevision: resp.Header.Revision}, nil
}

// MaxUpdateAll is the most records UpdateAll writes in one transaction:
// each costs a compare and up to three operations, and etcd refuses a
// transaction of more than 128 operations by default (--max-txn-ops).
const MaxUpdateAll = 32

// TabletUpdate is one record of UpdateAll: next written over cur.
type TabletUpdate struct {
	Cur  VersionedTablet
	Next TabletRecord
}

// UpdateAll is Update of several tablets in one transaction: every
// record written, with its mirrors, or none (ErrConflict if any record
// changed since its read; the caller tells which by updating them one
// by one). At most MaxUpdateAll records, of distinct tablets. It returns
// the new ModRevision of all of them.
func UpdateAll(ctx context.Context, cli clientv3.KV, l Layout, ups []TabletUpdate) (int64, error) {
	if len(ups) == 0 || len(ups) > MaxUpdateAll {
		return 0, fmt.Errorf("meta: updating %d tablets in one transaction: 1 to %d", len(ups), MaxUpdateAll)
	}
	seen := make(map[string]bool, len(ups))
	var ifs []clientv3.Cmp
	var ops []clientv3.Op
	for i := range ups {
		cur, next := &ups[i].Cur, &ups[i].Next
		if next.Table != cur.Table || next.ID != cur.ID {
			return 0, fmt.Errorf("meta: update of tablet %s/%s names %s/%s", cur.Table, cur.ID, next.Table, next.ID)
		}
		key, value := l.TabletKey(cur.Table, cur.ID), EncodeTablet(*next)
		if seen[key] {
			return 0, fmt.Errorf("meta: tablet %s/%s twice in one transaction", cur.Table, cur.ID)
		}
		seen[key] = true
		ifs = append(ifs, clientv3.Compare(clientv3.ModRevision(key), "=", cur.ModRevision))
		ops = append(append(ops, clientv3.OpPut(key, value)), mirrorOps(l, &cur.TabletRecord, next, value)...)
	}
	resp, err := cli.Txn(ctx).If(ifs...).Then(ops...).Commit()
	if err != nil {
		return 0, fmt.Errorf("meta: updating %d tablets: %w", len(ups), err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("%w: one of %d tablets changed since it was read", ErrConflict, len(ups))
	}
	return resp.Header.Revision, nil
}

// Assign gives cur to server (under the server's current lease) with the
// epoch bumped by one, in a transaction guarded by cur's ModRevision, by
// servers/<id> still being bound to server.Lease (so a stale view of a
// server that registered again cannot hand it a tablet under a lease it no
// longer holds) and by the extra guards (ErrConflict if one fails).
func Assign(ctx context.Context, cli clientv3.KV, l Layout, cur VersionedTablet, server ServerRecord, guards ...Guard) (VersionedTablet, error) {
	if server.Lease == 0 {
		return VersionedTablet{}, fmt.Errorf("meta: assigning tablet %s/%s to server %s, which has no lease", cur.Table, cur.ID, server.ID)
	}
	next := cur.TabletRecord
	next.Server, next.Address, next.Lease = server.ID, server.Address, server.Lease
	next.State = StateAssigned
	next.Epoch = cur.Epoch + 1
	guards = append(guards, LeaseGuard(l, server.ID, server.Lease))
	return Update(ctx, cli, l, cur, next, guards...)
}

// Unassigned returns r released by its owner: no server, no lease, same
// epoch (the next assignment bumps it).
func Unassigned(r TabletRecord) TabletRecord {
	r.State, r.Server, r.Address, r.Lease = StateUnassigned, "", "", 0
	return r
}

// CommitSplit replaces parent by left and right in ONE etcd transaction: if
// the parent key's ModRevision is still parentRev (so its owner and epoch
// are unchanged) it deletes the parent and puts both children; otherwise it
// returns ErrConflict. The children must tile the parent's range exactly:
// left.Start == parent.Start, left.End == right.Start (a non-empty key
// strictly inside the parent), right.End == parent.End.
//
// The children are assigned to the parent's owner under its lease, and the
// transaction also requires servers/<owner> to be bound to that lease: a
// server that lost its registration cannot commit a split.
func CommitSplit(ctx context.Context, cli clientv3.KV, l Layout, parentRev int64, parent, left, right TabletRecord) error {
	if err := checkSplit(parent, left, right); err != nil {
		return err
	}
	pk := l.TabletKey(parent.Table, parent.ID)
	lk, rk := l.TabletKey(left.Table, left.ID), l.TabletKey(right.Table, right.ID)
	resp, err := cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.ModRevision(pk), "=", parentRev),
			clientv3.Compare(clientv3.CreateRevision(lk), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(rk), "=", 0),
			LeaseGuard(l, left.Server, left.Lease).cmp,
		).
		Then(splitOps(l, parent, left, right)...).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: committing the split of tablet %s/%s: %w", parent.Table, parent.ID, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: split of tablet %s/%s: it changed since revision %d", ErrConflict, parent.Table, parent.ID, parentRev)
	}
	return nil
}

// splitOps replaces parent by left and right, with their mirrors.
func splitOps(l Layout, parent, left, right TabletRecord) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpDelete(l.TabletKey(parent.Table, parent.ID))}
	ops = append(ops, mirrorOps(l, &parent, nil, "")...)
	for _, c := range []*TabletRecord{&left, &right} {
		v := EncodeTablet(*c)
		ops = append(ops, clientv3.OpPut(l.TabletKey(c.Table, c.ID), v))
		ops = append(ops, mirrorOps(l, nil, c, v)...)
	}
	return ops
}

func checkSplit(parent, left, right TabletRecord) error {
	bad := func(why string) error {
		return fmt.Errorf("meta: bad split of tablet %s/%s: %s", parent.Table, parent.ID, why)
	}
	switch {
	case left.Table != parent.Table || right.Table != parent.Table:
		return bad("children belong to another table")
	case left.ID == "" || right.ID == "" || left.ID == right.ID || left.ID == parent.ID || right.ID == parent.ID:
		return bad("children need fresh, distinct ids")
	case !bytes.Equal(left.Start, parent.Start) || !bytes.Equal(right.End, parent.End):
		return bad("children do not cover the parent's range")
	case len(left.End) == 0 || !bytes.Equal(left.End, right.Start):
		return bad("left end and right start must be the same non-empty split key")
	case left.Server == "" || left.Lease == 0 || left.Server != right.Server || left.Lease != right.Lease:
		return bad("children must be assigned to one server under its lease")
	case !parent.Contains(left.End) || bytes.Equal(left.End, parent.Start):
		return bad(fmt.Sprintf("split key %q is not strictly inside the parent", left.End))
	}
	return nil
}

func sortVersioned(ts []VersionedTablet) {
	sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].Start, ts[j].Start) < 0 })
}
