package meta

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fences: what became of a split or a merge whose answer was lost
// (docs/CONTRACTS.md §7: a remote step whose answer never came is never
// taken for "did not happen").
//
// CommitSplit and CommitMerge are guarded by the ModRevisions of the keys
// they delete. A fence is a transaction under those same guards that
// rewrites the keys as they are (a put that keeps value and lease): if it
// succeeds, their ModRevisions have moved on, so the lost transaction,
// whether it never arrived or is still on its way to etcd, can never
// commit: NotCommitted is certain. If a guard fails, the lost transaction
// cannot commit from then on either (a ModRevision never returns to an old
// value; a deleted key's is 0), and the fence's Else branch reads, at that
// same revision, the keys that tell whether it did: a key it creates
// exists, so it committed; a key it deletes still exists, so it never did.
// Neither (the children were split or dropped since, say) leaves it
// unknowable: Unknown, and no error, since asking again cannot tell more.
//
// A fence is idempotent under its guards: when the fence's own answer is
// lost the caller sends it again; if the first one applied, the next one
// fails its guard and reads the keys it left.

// Outcome is what a fence found out about a transaction whose answer was
// lost.
type Outcome int

const (
	// Unknown: the transaction can no longer commit, but whether it did
	// cannot be told; keep everything it may have published.
	Unknown Outcome = iota
	// NotCommitted: the transaction did not commit, and never will.
	NotCommitted
	// Committed: the transaction committed.
	Committed
)

func (o Outcome) String() string {
	switch o {
	case NotCommitted:
		return "not committed"
	case Committed:
		return "committed"
	}
	return "unknown"
}

// touch rewrites key as it is: same value, same lease, a new ModRevision.
func touch(key string) clientv3.Op {
	return clientv3.OpPut(key, "", clientv3.WithIgnoreValue(), clientv3.WithIgnoreLease())
}

// FenceSplit finds out whether CommitSplit(parentRev, parent, left, right)
// committed when its answer was lost, and makes sure it cannot commit
// later. An error means the fence's own answer was lost: call it again.
func FenceSplit(ctx context.Context, cli clientv3.KV, l Layout, parentRev int64, parent, left, right TabletRecord) (Outcome, error) {
	pk := l.TabletKey(parent.Table, parent.ID)
	got, err := fence(ctx, cli, map[string]int64{pk: parentRev}, mirrorOps(l, nil, &parent, EncodeTablet(parent)),
		l.TabletKey(left.Table, left.ID), l.TabletKey(right.Table, right.ID), pk)
	switch {
	case err != nil:
		return Unknown, fmt.Errorf("meta: fencing the split of tablet %s/%s: %w", parent.Table, parent.ID, err)
	case got == nil:
		return NotCommitted, nil
	}
	for _, c := range got[:2] {
		if c != nil && c.Parent == parent.ID {
			return Committed, nil
		}
	}
	if got[2] != nil {
		return NotCommitted, nil // the split deletes its parent
	}
	return Unknown, nil
}

// FenceMerge finds out whether CommitMerge(leftRev, rightRev, left, right,
// merged) committed when its answer was lost, and makes sure it cannot
// commit later. An error means the fence's own answer was lost: call it
// again.
func FenceMerge(ctx context.Context, cli clientv3.KV, l Layout, leftRev, rightRev int64, left, right, merged TabletRecord) (Outcome, error) {
	lk, rk := l.TabletKey(left.Table, left.ID), l.TabletKey(right.Table, right.ID)
	mirrors := append(mirrorOps(l, nil, &left, EncodeTablet(left)), mirrorOps(l, nil, &right, EncodeTablet(right))...)
	got, err := fence(ctx, cli, map[string]int64{lk: leftRev, rk: rightRev}, mirrors,
		l.TabletKey(merged.Table, merged.ID), lk, rk)
	switch {
	case err != nil:
		return Unknown, fmt.Errorf("meta: fencing the merge of tablets %s/%s and %s: %w", left.Table, left.ID, right.ID, err)
	case got == nil:
		return NotCommitted, nil
	}
	if m := got[0]; m != nil && slices.Equal(m.MergedFrom, []string{left.ID, right.ID}) {
		return Committed, nil
	}
	if got[1] != nil || got[2] != nil {
		return NotCommitted, nil // the merge deletes both parents
	}
	return Unknown, nil
}

// fence touches every key of revs if each still has its ModRevision there,
// and writes mirrors, the parents' mirrors as they are (so that each keeps
// its record's ModRevision);
// otherwise it reads the keys read at the same revision and returns their
// records: nil for a key that does not exist, an empty record for one that
// exists but does not decode (it exists; its fields tell nothing). got is
// nil when the fence applied.
func fence(ctx context.Context, cli clientv3.KV, revs map[string]int64, mirrors []clientv3.Op, read ...string) (got []*TabletRecord, err error) {
	var guards []clientv3.Cmp
	var touches, reads []clientv3.Op
	for _, k := range slices.Sorted(maps.Keys(revs)) {
		guards = append(guards, clientv3.Compare(clientv3.ModRevision(k), "=", revs[k]))
		touches = append(touches, touch(k))
	}
	touches = append(touches, mirrors...)
	for _, k := range read {
		reads = append(reads, clientv3.OpGet(k))
	}
	resp, err := cli.Txn(ctx).If(guards...).Then(touches...).Else(reads...).Commit()
	if err != nil || resp.Succeeded {
		return nil, err
	}
	got = make([]*TabletRecord, len(resp.Responses))
	for i, r := range resp.Responses {
		kvs := r.GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			continue
		}
		t, err := DecodeTablet(kvs[0].Value)
		if err != nil {
			t = TabletRecord{}
		}
		got[i] = &t
	}
	return got, nil
}
