package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Guard is a condition a transaction holds to: if it fails, the
// transaction changes nothing. The master guards every write of a term
// by its election key (LeaderGuard); an assignment is guarded by the
// server's lease (LeaseGuard). Guards keep etcd's comparisons inside meta,
// so no caller builds a clientv3.Cmp.
type Guard struct {
	cmp clientv3.Cmp
}

// LeaderGuard holds while the election key key still exists at creation
// revision rev: while the term of the master that won with it lasts.
func LeaderGuard(key string, rev int64) Guard {
	return Guard{clientv3.Compare(clientv3.CreateRevision(key), "=", rev)}
}

// LeaseGuard holds while servers/<id> exists and is bound to lease.
func LeaseGuard(l Layout, id string, lease int64) Guard {
	return Guard{clientv3.Compare(clientv3.LeaseValue(l.ServerKey(id)), "=", clientv3.LeaseID(lease))}
}

// cmps returns the comparisons of gs, after those in first.
func cmps(first []clientv3.Cmp, gs ...Guard) []clientv3.Cmp {
	out := append([]clientv3.Cmp(nil), first...)
	for _, g := range gs {
		out = append(out, g.cmp)
	}
	return out
}

// CheckGuard asks etcd whether g holds now, in an empty transaction
// guarded by it; ErrConflict if it does not.
func CheckGuard(ctx context.Context, kv clientv3.KV, g Guard) error {
	resp, err := kv.Txn(ctx).If(g.cmp).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: the guard no longer holds", ErrConflict)
	}
	return nil
}
