package quota

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// Usage publishes, from the leading master, the stored bytes of every
// table and namespace that has a space quota: the sum of its tablets'
// sizes in the master's latest load report, written to
// quotas/usage/<scope>/<name> when it changed. The tablet servers follow
// it (Follower) and refuse writes that store data while it is at or past
// the limit. A report that missed a server (it did not answer) counts its
// tablets as empty until the next one.
type Usage struct {
	store  meta.Store
	layout meta.Layout
	log    *slog.Logger
	lim    *Limiter
	kick   chan struct{}

	mu      sync.Mutex // protects the fields below
	sizes   map[string]int64
	at      time.Time
	written map[Key]int64
}

// NewUsage returns a publisher; its owner runs Run and feeds Observe.
func NewUsage(s meta.Store, l meta.Layout, log *slog.Logger) *Usage {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Usage{store: s, layout: l, log: log, lim: NewLimiter(nil), kick: make(chan struct{}, 1), written: map[Key]int64{}}
}

// Wanted says some table or namespace has a space quota: without one
// there is nothing to publish, and the master skips summing its report.
func (u *Usage) Wanted() bool {
	for _, in := range u.lim.Quotas() {
		if in.Limits.SpaceBytes > 0 && in.Key.Scope != Principal {
			return true
		}
	}
	return false
}

// Observe takes the table sizes of a load report (by table) made at at.
// It returns at once; Run writes.
func (u *Usage) Observe(at time.Time, sizes map[string]int64) {
	u.mu.Lock()
	u.sizes, u.at = sizes, at
	u.mu.Unlock()
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// Run follows the quotas and publishes each observed report until ctx
// ends.
func (u *Usage) Run(ctx context.Context) {
	f := &Follower{Store: u.store, Layout: u.layout, Limiter: u.lim, Log: u.log}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx)
	}()
	defer func() { <-done }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.kick:
		}
		if err := u.publish(ctx); err != nil && ctx.Err() == nil {
			u.log.Warn("quota: publishing space usage", "err", err)
		}
	}
}

func (u *Usage) publish(ctx context.Context) error {
	u.mu.Lock()
	sizes, at := u.sizes, u.at
	u.mu.Unlock()
	for _, in := range u.lim.Quotas() {
		if in.Limits.SpaceBytes <= 0 || in.Key.Scope == Principal {
			continue
		}
		var n int64
		for t, b := range sizes {
			if (in.Key.Scope == Table && t == in.Key.Name) || (in.Key.Scope == Namespace && NamespaceOf(t) == in.Key.Name) {
				n += b
			}
		}
		if w, ok := u.written[in.Key]; ok && w == n && in.Usage == n {
			continue
		}
		if err := meta.PutQuotaUsage(ctx, u.store, u.layout, string(in.Key.Scope), in.Key.Name, meta.UsageRecord{Bytes: n, At: at.Unix()}); err != nil {
			return err
		}
		u.written[in.Key] = n
	}
	return nil
}
