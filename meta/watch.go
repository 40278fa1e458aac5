package meta

import (
	"context"
	"iter"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchServers signals once the watch is established, then every change
// under servers/; see watchSignal.
func WatchServers(ctx context.Context, w clientv3.Watcher, l Layout) <-chan struct{} {
	return watchSignal(ctx, w, l.ServersPrefix())
}

// WatchTablets signals once the watch is established, then every change
// under tablets/; see watchSignal.
func WatchTablets(ctx context.Context, w clientv3.Watcher, l Layout) <-chan struct{} {
	return watchSignal(ctx, w, l.AllTabletsPrefix())
}

// watchSignal watches prefix (requiring an etcd leader) and turns each
// answer into a signal for a reader that re-reads what it needs: the
// channel holds at most one pending signal (a burst coalesces into one),
// and it is closed when the watch ends (ctx ended, or etcd ended it: the
// caller opens another). Its goroutine never blocks on the reader and
// ends with the watch.
//
// The first signal comes when etcd has established the watch, before any
// change: a watch opened without a revision starts wherever etcd is when
// it gets the request, some time after Watch returns, so a change made in
// between is in neither the caller's read before the call nor the watch.
// A reader that re-reads on every signal (as the master's assignment loop
// does with servers/) misses nothing; without this signal a tablet server
// registering in that window stayed unknown to placement until the next
// change of servers/ (docs/BENCHMARKS.md "The master at 100,000 tablets,
// real processes").
func watchSignal(ctx context.Context, w clientv3.Watcher, prefix string) <-chan struct{} {
	wch := w.Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
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
