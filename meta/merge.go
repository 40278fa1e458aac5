package meta

import (
	"bytes"
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// CommitMerge replaces the adjacent tablets left and right by merged in ONE
// etcd transaction: if both keys' ModRevisions are still leftRev and
// rightRev (so their owners and epochs are unchanged) it deletes both and
// puts merged; otherwise it returns ErrConflict. merged must cover exactly
// [left.Start, right.End), where left.End == right.Start, and be assigned
// at an epoch above both parents'.
//
// merged is assigned to the parents' owner under its lease, and the
// transaction also requires servers/<owner> to be bound to that lease: a
// server that lost its registration cannot commit a merge.
func CommitMerge(ctx context.Context, cli clientv3.KV, l Layout, leftRev, rightRev int64, left, right, merged TabletRecord) error {
	if err := checkMerge(left, right, merged); err != nil {
		return err
	}
	lk, rk := l.TabletKey(left.Table, left.ID), l.TabletKey(right.Table, right.ID)
	mk := l.TabletKey(merged.Table, merged.ID)
	resp, err := cli.Txn(ctx).
		If(
			clientv3.Compare(clientv3.ModRevision(lk), "=", leftRev),
			clientv3.Compare(clientv3.ModRevision(rk), "=", rightRev),
			clientv3.Compare(clientv3.CreateRevision(mk), "=", 0),
			LeaseGuard(l, merged.Server, merged.Lease).cmp,
		).
		Then(mergeOps(l, left, right, merged)...).
		Commit()
	if err != nil {
		return fmt.Errorf("meta: committing the merge of tablets %s/%s and %s: %w", left.Table, left.ID, right.ID, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: merge of tablets %s/%s and %s: one changed since revisions %d, %d", ErrConflict, left.Table, left.ID, right.ID, leftRev, rightRev)
	}
	return nil
}

// mergeOps replaces left and right by merged, with their mirrors.
func mergeOps(l Layout, left, right, merged TabletRecord) []clientv3.Op {
	v := EncodeTablet(merged)
	ops := []clientv3.Op{
		clientv3.OpDelete(l.TabletKey(left.Table, left.ID)),
		clientv3.OpDelete(l.TabletKey(right.Table, right.ID)),
		clientv3.OpPut(l.TabletKey(merged.Table, merged.ID), v),
	}
	ops = append(ops, mirrorOps(l, &left, nil, "")...)
	ops = append(ops, mirrorOps(l, &right, nil, "")...)
	return append(ops, mirrorOps(l, nil, &merged, v)...)
}

func checkMerge(left, right, merged TabletRecord) error {
	bad := func(why string) error {
		return fmt.Errorf("meta: bad merge of tablets %s/%s and %s: %s", left.Table, left.ID, right.ID, why)
	}
	switch {
	case right.Table != left.Table || merged.Table != left.Table:
		return bad("the tablets belong to different tables")
	case merged.ID == "" || left.ID == right.ID || merged.ID == left.ID || merged.ID == right.ID:
		return bad("the merged tablet needs a fresh id, the parents distinct ones")
	case len(left.End) == 0 || !bytes.Equal(left.End, right.Start):
		return bad("left's end must be right's start")
	case !bytes.Equal(merged.Start, left.Start) || !bytes.Equal(merged.End, right.End):
		return bad("the merged tablet does not cover exactly both parents' ranges")
	case merged.Server == "" || merged.Lease == 0:
		return bad("the merged tablet must be assigned to a server under its lease")
	case merged.Epoch <= left.Epoch || merged.Epoch <= right.Epoch:
		return bad("the merged tablet's epoch must be above both parents'")
	}
	return nil
}
