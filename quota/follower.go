package quota

import (
	"context"
	"log/slog"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// DefaultShareInterval is how often a Follower recomputes its server's
// shares: a tablet move shifts a table's share between servers within
// about this long (docs/OPERATIONS.md "Quotas").
const DefaultShareInterval = 5 * time.Second

// Follower keeps a Limiter equal to the quotas in etcd (loaded, then
// followed by watch, loaded again whenever the watch breaks) and, on a
// tablet server, recomputes the server's share of each rate limit.
type Follower struct {
	Store   meta.Store
	Layout  meta.Layout
	Limiter *Limiter
	Log     *slog.Logger
	// Held counts the tablets this server holds, by table. Nil (the
	// master) computes no shares.
	Held func() map[string]int
	// ShareInterval spaces share computations. The default is
	// DefaultShareInterval.
	ShareInterval time.Duration

	kick chan struct{}
}

// Run follows etcd until ctx ends.
func (f *Follower) Run(ctx context.Context) {
	if f.Log == nil {
		f.Log = slog.New(slog.DiscardHandler)
	}
	if f.ShareInterval <= 0 {
		f.ShareInterval = DefaultShareInterval
	}
	f.kick = make(chan struct{}, 1)
	done := make(chan struct{})
	if f.Held != nil {
		go func() {
			defer close(done)
			f.shareLoop(ctx)
		}()
	} else {
		close(done)
	}
	defer func() { <-done }()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		entries, rev, err := meta.LoadQuotas(ctx, f.Store, f.Layout)
		if err != nil {
			if ctx.Err() == nil {
				f.Log.Warn("quota: loading quotas", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		f.replace(entries)
		for changes := range meta.WatchQuotas(ctx, f.Store, f.Layout, rev+1) {
			for _, e := range changes {
				f.apply(e)
			}
			f.signal()
		}
	}
}

func (f *Follower) signal() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// replace makes the limiter hold exactly entries (a fresh load).
func (f *Follower) replace(entries []meta.QuotaEntry) {
	keep := map[Key]bool{}
	for _, e := range entries {
		if e.Err == nil && !e.IsUsage {
			keep[Key{Scope(e.Scope), e.Name}] = true
		}
	}
	for _, in := range f.Limiter.Quotas() {
		if !keep[in.Key] {
			f.Limiter.Remove(in.Key)
		}
	}
	// Limits before usage: usage is kept only for a quota held.
	for _, usage := range []bool{false, true} {
		for _, e := range entries {
			if e.IsUsage == usage {
				f.apply(e)
			}
		}
	}
	f.signal()
}

func (f *Follower) apply(e meta.QuotaEntry) {
	if e.Err != nil {
		f.Log.Warn("quota: ignoring a record", "err", e.Err)
		return
	}
	k := Key{Scope(e.Scope), e.Name}
	switch {
	case e.IsUsage && !e.Deleted:
		f.Limiter.SetUsage(k, e.Usage.Bytes)
	case e.IsUsage:
	case e.Deleted:
		f.Limiter.Remove(k)
	default:
		f.Limiter.Set(k, e.Limits)
	}
}

func (f *Follower) shareLoop(ctx context.Context) {
	t := time.NewTicker(f.ShareInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.kick:
		}
		if err := f.shares(ctx); err != nil && ctx.Err() == nil {
			f.Log.Warn("quota: computing this server's shares", "err", err)
		}
	}
}

// shares sets this server's share of every quota: for a table, the part
// of its tablets held here; for a namespace, the part of its tables'
// tablets; for a principal, one over the live servers (a principal's
// calls are not tied to tablets). The totals come from etcd count-only
// ranges, all in one transaction (meta.CountKeys): a table's tablets, a
// namespace's ("tablets/NS:"), the servers; the default namespace's
// tables share no prefix, so its total is every tablet less the created
// namespaces' (meta.CountDefaultNamespaceTablets: one more keys-only read
// of the namespace records and a count per namespace). No tablet key is
// read, whatever the cluster's size.
func (f *Follower) shares(ctx context.Context) error {
	held := f.Held()
	var keys []Key
	var prefixes []string
	defaultAt := -1 // index in keys of the default namespace's quota
	for _, in := range f.Limiter.Quotas() {
		if rates(in.Limits) == [4]float64{} {
			continue // a space quota only: no share to compute
		}
		switch {
		case in.Key.Scope == Table:
			prefixes = append(prefixes, f.Layout.TabletsPrefix(in.Key.Name))
		case in.Key.Scope == Namespace && in.Key.Name == cell.DefaultNamespace:
			defaultAt = len(keys)
			prefixes = append(prefixes, "") // counted below
		case in.Key.Scope == Namespace:
			prefixes = append(prefixes, f.Layout.NamespaceTabletsPrefix(in.Key.Name))
		case in.Key.Scope == Principal:
			prefixes = append(prefixes, f.Layout.ServersPrefix())
		default:
			continue
		}
		keys = append(keys, in.Key)
	}
	if len(keys) == 0 {
		return nil
	}
	var counted []string
	for _, p := range prefixes {
		if p != "" {
			counted = append(counted, p)
		}
	}
	counts, err := meta.CountKeys(ctx, f.Store, counted...)
	if err != nil {
		return err
	}
	var defaultTotal int64
	if defaultAt >= 0 {
		if defaultTotal, err = meta.CountDefaultNamespaceTablets(ctx, f.Store, f.Layout); err != nil {
			return err
		}
	}
	for i, k := range keys {
		var mine, total int64
		if i == defaultAt {
			total = defaultTotal
		} else {
			total, counts = counts[0], counts[1:]
		}
		switch k.Scope {
		case Table:
			mine = int64(held[k.Name])
		case Namespace:
			for t, n := range held {
				if NamespaceOf(t) == k.Name {
					mine += int64(n)
				}
			}
		case Principal:
			mine = 1
		}
		f.Limiter.SetShare(k, Share(mine, total))
	}
	return nil
}

// Share is mine over total, as a share of a limit: a server that holds
// none of the tablets (one moving in) gets one tablet's share, never 0.
func Share(mine, total int64) float64 {
	mine, total = max(mine, 1), max(total, mine, 1)
	return float64(mine) / float64(total)
}
