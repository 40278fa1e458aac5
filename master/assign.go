package master

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

const (
	// reconcileInterval is how often the leader re-reads the whole map even
	// without watch events (retries after failures ride on it).
	reconcileInterval = 500 * time.Millisecond
	// maxLoadFailures is how many failed LoadTablet calls a server gets
	// before the tablet is given to another server.
	maxLoadFailures = 3
	// missingRetry is how often a tablet whose files are missing is tried
	// again.
	missingRetry = 30 * time.Second
	// maxConcurrentLoads bounds the LoadTablet calls in flight.
	maxConcurrentLoads = 16
)

// assigner is the leader's assignment loop for one term: it watches
// servers/ and tablets/ and makes every tablet of a live table held by a
// live server, confirmed by a successful LoadTablet.
type assigner struct {
	m    *Master
	term *leadership
	kick chan struct{}
	sem  chan struct{}
	// wg tracks the LoadTablet goroutines; run waits for them.
	wg sync.WaitGroup

	// passes counts finished reconcile passes (tests wait on it).
	passes atomic.Int64
	// missing counts loads answered DATA_LOSS (a tablet's files are gone).
	missing atomic.Int64
	// audited counts confirmed tablets the audit found not served.
	audited atomic.Int64
	// auditing is set while an audit runs (one at a time).
	auditing atomic.Bool
	// auditNow, when a test sends on it, runs an audit at once.
	auditNow chan struct{}

	// mu protects loads.
	mu sync.Mutex
	// loads is what this term knows of each tablet key's loading.
	loads map[string]*loadState
}

type loadState struct {
	inflight bool
	// epoch and server of the last load attempt; confirmed if it worked.
	// A confirmed load stays confirmed while the tablet record keeps its
	// epoch: the record names the owner's lease, and owned() checks it.
	epoch     int64
	server    string
	confirmed bool
	// confirmedAt is when the load was confirmed (the audit skips later ones).
	confirmedAt time.Time
	failures    int
	next        time.Time // no new attempt before this
	// waiting is set while the previous owner's lease is still alive.
	waiting bool
	// missing is set while the owner answers that the tablet's files are
	// gone (DATA_LOSS): the tablet is never handed on for that.
	missing bool
	// refused is set when the last load was refused (FAILED_PRECONDITION:
	// the server will not serve this assignment, e.g. it unloaded that
	// epoch); a new epoch, even on the same server, is the way out.
	refused bool
}

func newAssigner(m *Master, term *leadership) *assigner {
	return &assigner{
		m: m, term: term,
		kick:     make(chan struct{}, 1),
		auditNow: make(chan struct{}, 1),
		sem:      make(chan struct{}, maxConcurrentLoads),
		loads:    map[string]*loadState{},
	}
}

// poke asks for a reconcile soon; it never blocks.
func (a *assigner) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// unconfirm forgets that the tablet at key was loaded, so that the next
// pass loads it again.
func (a *assigner) unconfirm(key string) {
	a.mu.Lock()
	if st := a.loads[key]; st != nil {
		st.confirmed = false
	}
	a.mu.Unlock()
	a.poke()
}

// run reconciles on every watch event, poke and tick until the term ends,
// then waits for its loads.
func (a *assigner) run() {
	defer a.wg.Wait()
	ctx := a.term.ctx
	cli, l := a.m.cli, a.m.layout
	// The watches only wake the loop: reconcile reads the whole map.
	ws, wt := meta.WatchServers(ctx, cli, l), meta.WatchTablets(ctx, cli, l)
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	auditTick := time.NewTicker(auditInterval)
	defer auditTick.Stop()
	for {
		a.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-auditTick.C:
			a.startAudit(ctx)
		case <-a.auditNow:
			a.startAudit(ctx)
		case _, ok := <-ws:
			if !ok && ctx.Err() == nil {
				ws = meta.WatchServers(ctx, cli, l)
			}
		case _, ok := <-wt:
			if !ok && ctx.Err() == nil {
				wt = meta.WatchTablets(ctx, cli, l)
			}
		case <-a.kick:
		case <-tick.C:
		}
		// Coalesce a burst of events into one pass.
		for drained := false; !drained; {
			select {
			case _, ok := <-ws:
				drained = !ok // a closed watch is re-opened by the select above
			case _, ok := <-wt:
				drained = !ok
			case <-a.kick:
			default:
				drained = true
			}
		}
	}
}

// reconcile makes one pass over the whole tablet map.
func (a *assigner) reconcile(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	snap, err := a.m.readSnapshot(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.m.log.Warn("reading the tablet map", "err", err)
		}
		return
	}
	liveAddrs := map[string]bool{}
	for _, s := range snap.servers {
		liveAddrs[s.Address] = true
	}
	a.m.conns.retain(liveAddrs)
	counts := snap.counts()
	a.m.counters.serversLive.Store(int64(len(snap.servers)))
	leaseGone := map[int64]bool{} // TimeToLive answers of this pass
	seen := make(map[string]bool, len(snap.tablets))
	now := time.Now()
	for _, t := range snap.tablets {
		key := a.m.layout.TabletKey(t.Table, t.ID)
		seen[key] = true
		schema := snap.tables[t.Table]
		if schema == nil || schema.GetState() == meta.TableDeleting {
			continue
		}
		a.mu.Lock()
		st := a.loads[key]
		if st == nil {
			st = &loadState{}
			a.loads[key] = st
		}
		if st.inflight {
			a.mu.Unlock()
			continue
		}
		if st.epoch != t.Epoch || st.server != t.Server {
			*st = loadState{} // a new assignment: forget the old one's history
		}
		srv, ok := snap.owned(&t.TabletRecord)
		reassign, exclude, load, handOn, checkLease := false, "", false, false, false
		switch {
		case !ok:
			checkLease = true
		case t.State == meta.StateSplitting:
		case st.confirmed:
		case now.Before(st.next):
		case st.failures >= maxLoadFailures && !st.missing && (len(snap.servers) > 1 || st.refused):
			// Hand it on: to another server, or, when the only server
			// refuses this epoch (it unloaded it), to that server again at
			// a new epoch.
			handOn = true
		default:
			load = true
		}
		a.mu.Unlock()
		if checkLease {
			// One owner, always: hand the tablet on only once the lease it
			// was assigned under is gone (docs/OWNERSHIP.md).
			stopped, err := a.m.previousOwnerStopped(ctx, snap, &t.TabletRecord, leaseGone)
			a.noteWaiting(key, &t.TabletRecord, !stopped, err)
			reassign = stopped
		}
		if handOn {
			// The owner keeps failing to load it: take it back with a
			// confirmed unload before giving it to someone else.
			if err := a.m.unloadFrom(ctx, &t.TabletRecord); err != nil {
				a.m.log.Warn("taking back a tablet that fails to load", "tablet", key, "server", t.Server, "err", err)
				a.mu.Lock()
				st.next = time.Now().Add(loadBackoff(st.failures))
				a.mu.Unlock()
				continue
			}
			reassign, exclude = true, t.Server
		}
		switch {
		case reassign:
			to, ok := snap.pick(counts, exclude)
			if !ok {
				continue // no live server; wait for one
			}
			next, err := meta.Assign(ctx, a.m.cli, a.m.layout, t, to, a.term.guard())
			if err != nil {
				if ctx.Err() == nil {
					a.m.log.Info("assigning tablet", "tablet", key, "err", err)
				}
				continue
			}
			counts[to.ID]++
			a.m.counters.assigned(t.Server != "" && exclude == "")
			if old, ok := snap.owned(&t.TabletRecord); ok {
				counts[old.ID]--
			}
			kind := "assign" // a new tablet, or one nobody held
			if t.Server != "" {
				kind = "reassign" // its server died or kept failing to load it
			}
			a.m.log.Info("assigned tablet", "event", kind, "tablet", key, "server", to.ID, "epoch", next.Epoch, "from", t.Server)
			a.startLoad(ctx, key, next.TabletRecord, schema, to)
		case load:
			a.startLoad(ctx, key, t.TabletRecord, schema, srv)
		}
	}
	a.mu.Lock()
	for key, st := range a.loads {
		if !seen[key] && !st.inflight {
			delete(a.loads, key)
		}
	}
	a.mu.Unlock()
	a.passes.Add(1)
}

// startAudit runs auditOnce in the background unless one runs.
func (a *assigner) startAudit(ctx context.Context) {
	if !a.auditing.CompareAndSwap(false, true) {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.auditing.Store(false)
		a.auditOnce(ctx)
	}()
}

// startLoad tells srv to load t at t.Epoch, in the background.
func (a *assigner) startLoad(ctx context.Context, key string, t meta.TabletRecord, schema *tabulapb.TableSchema, srv meta.ServerRecord) {
	a.mu.Lock()
	st := a.loads[key]
	if st == nil {
		st = &loadState{}
		a.loads[key] = st
	}
	if st.epoch != t.Epoch || st.server != t.Server {
		*st = loadState{epoch: t.Epoch, server: t.Server}
	}
	st.inflight = true
	a.mu.Unlock()
	req := &tabulapb.LoadTabletRequest{Tablet: t.ToProto(), Schema: a.m.serverSchema(schema)}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		err := a.load(ctx, srv.Address, req)
		a.mu.Lock()
		defer a.mu.Unlock()
		st.inflight = false
		if err == nil {
			st.confirmed, st.confirmedAt, st.failures, st.next = true, time.Now(), 0, time.Time{}
			return
		}
		if status.Code(err) == codes.DataLoss {
			// The tablet's files are missing: no server can load it, and
			// handing it around would only bump its epoch. Say so loudly
			// and look again now and then (an operator may restore them).
			st.missing = true
			st.next = time.Now().Add(missingRetry)
			a.missing.Add(1)
			if ctx.Err() == nil {
				a.m.log.Error("tablet data missing: its files are not in the storage root; restore them, it is retried every "+missingRetry.String(),
					"tablet", key, "server", srv.ID, "epoch", t.Epoch, "err", err)
			}
			return
		}
		st.missing = false
		st.refused = status.Code(err) == codes.FailedPrecondition
		st.failures++
		st.next = time.Now().Add(loadBackoff(st.failures))
		if ctx.Err() == nil {
			a.m.log.Warn("LoadTablet failed", "tablet", key, "server", srv.ID, "epoch", t.Epoch, "failures", st.failures, "err", err)
		}
	}()
}

func (a *assigner) load(ctx context.Context, addr string, req *tabulapb.LoadTabletRequest) error {
	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	c, err := a.m.conns.client(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.m.opts.LoadTimeout)
	defer cancel()
	_, err = c.LoadTablet(ctx, req)
	return err
}

// noteWaiting logs, once per wait, that a tablet waits for the lease of
// its previous owner.
func (a *assigner) noteWaiting(key string, t *meta.TabletRecord, waiting bool, err error) {
	a.mu.Lock()
	st := a.loads[key]
	first := st != nil && waiting && !st.waiting
	if st != nil {
		st.waiting = waiting
	}
	a.mu.Unlock()
	switch {
	case err != nil && a.term.ctx.Err() == nil:
		a.m.log.Warn("checking the lease of a tablet's previous owner", "tablet", key, "server", t.Server, "lease", t.Lease, "err", err)
	case first:
		a.m.log.Info("waiting for the lease of the tablet's previous owner to expire", "tablet", key, "server", t.Server, "lease", t.Lease, "epoch", t.Epoch)
	}
}

func loadBackoff(failures int) time.Duration {
	d := 100 * time.Millisecond << min(failures, 6)
	return min(d, 5*time.Second)
}

// loaded reports whether this term confirmed the tablet at key loaded at
// epoch (and no load of it is in flight): the balancer moves only those.
func (a *assigner) loaded(key string, epoch int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.loads[key]
	return st != nil && st.confirmed && !st.inflight && st.epoch == epoch
}
