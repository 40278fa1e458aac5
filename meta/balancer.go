package meta

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The cluster's balancer switch is the value of <prefix>balancer: "on" or
// "off"; an absent key means on. (A table's own switch is in its schema.)

// BalancerOn reads the cluster's balancer switch (absent: on).
func BalancerOn(ctx context.Context, kv clientv3.KV, l Layout) (bool, error) {
	resp, err := kv.Get(ctx, l.BalancerKey())
	if err != nil {
		return false, fmt.Errorf("meta: reading the balancer switch: %w", err)
	}
	return len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != "off", nil
}

// SetBalancer writes the cluster's balancer switch, guarded by g
// (ErrConflict if it fails).
func SetBalancer(ctx context.Context, kv clientv3.KV, l Layout, on bool, g Guard) error {
	v := "on"
	if !on {
		v = "off"
	}
	resp, err := kv.Txn(ctx).If(g.cmp).Then(clientv3.OpPut(l.BalancerKey(), v)).Commit()
	if err != nil {
		return fmt.Errorf("meta: switching the balancer: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: switching the balancer: the guard failed", ErrConflict)
	}
	return nil
}
