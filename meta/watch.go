package meta

import (
	"context"
	"iter"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchServers signals every change under servers/ from now on; see
// watchSignal.
func WatchServers(ctx context.Context, w clientv3.Watcher, l Layout) <-chan struct{} {
	return watchSignal(ctx, w, l.ServersPrefix())
}

// WatchTablets signals every change under tablets/ from now on; see
// watchSignal.
func WatchTablets(ctx context.Context, w clientv3.Watcher, l Layout) <-chan struct{} {
	return watchSignal(ctx, w, l.AllTabletsPrefix())
}

// watchSignal watches prefix (requiring an etcd leader) and turns each
// answer into a signal for a reader that re-reads what it needs: the
// channel holds at most one pending signal (a burst coalesces into one),
// and it is closed when the watch ends (ctx ended, or etcd ended it: the
// caller opens another). Its goroutine never blocks on the reader and
// ends with the watch.
func watchSignal(ctx context.Context, w clientv3.Watcher, prefix string) <-chan struct{} {
	wch := w.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix())
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for range wch {
			select {
			case out <- struct{}{}:
			default: // one is pending already
			}
		}
	}()
	return out
}

// ServerChange is one change of servers/<id>: deleted (its lease expired
// or it deregistered), or put bound to Lease.
type ServerChange struct {
	Deleted bool
	Lease   int64
}

// WatchServer follows servers/<id> from revision from, one change at a
// time, until ctx ends or the watch ends.
func WatchServer(ctx context.Context, w clientv3.Watcher, l Layout, id string, from int64) iter.Seq[ServerChange] {
	return func(yield func(ServerChange) bool) {
		for resp := range w.Watch(ctx, l.ServerKey(id), clientv3.WithRev(from)) {
			for _, ev := range resp.Events {
				if !yield(ServerChange{Deleted: ev.Type == clientv3.EventTypeDelete, Lease: ev.Kv.Lease}) {
					return
				}
			}
		}
	}
}
