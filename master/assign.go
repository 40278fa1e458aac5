package master

import (
	"container/heap"
	"context"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

const (
	// resyncInterval is how often the leader walks the whole in-memory
	// index even without a change (a safety net: every change it acts on
	// reaches it through the index's feed, the servers' watch or its
	// due-time heap).
	resyncInterval = 5 * time.Minute
	// leaseRecheck is how often a tablet waiting for the lease of its
	// previous owner looks again.
	leaseRecheck = 500 * time.Millisecond
	// serversRetry is the pause before reading servers/ again or
	// re-opening its watch after an error.
	serversRetry = 500 * time.Millisecond
	// maxLoadFailures is how many failed LoadTablet calls a server gets
	// before the tablet is given to another server.
	maxLoadFailures = 3
	// missingRetry is how often a tablet whose files are missing is tried
	// again.
	missingRetry = 30 * time.Second
	// maxConcurrentLoads bounds the LoadTablet and LoadTablets calls in
	// flight.
	maxConcurrentLoads = 16
	// maxConcurrentAssigns bounds the assignment transactions in flight.
	maxConcurrentAssigns = 16
)

// assigner is the leader's assignment loop for one term: it makes every
// tablet of a live table held by a live server, confirmed by a successful
// LoadTablet. It reads the tablet map from the master's index, never from
// etcd: each tablet the index's feed reports changed is stepped on its
// own, retries wait in a due-time heap, and the whole index is walked only
// at term start, when the live servers change, when the index is rebuilt
// and every resyncInterval (docs/ARCHITECTURE.md "How many tablets etcd can hold").
type assigner struct {
	m    *Master
	term *leadership
	kick chan struct{}
	// sem and assignSem bound the load calls and the assignments in
	// flight; queues batch each server's loads (loadbatch.go).
	sem, assignSem chan struct{}
	queues         loadQueues
	// lastAudit is when the servers' answers the last audit used were
	// asked for, cleanAudit the inputs of the last audit that found
	// nothing (audit.go); only the one running audit touches them.
	lastAudit  time.Time
	cleanAudit auditKey
	// auditsRun counts audits run, auditsSkipped those skipped for
	// unchanged inputs (tests wait on them).
	auditsRun, auditsSkipped atomic.Int64
	// wg tracks the LoadTablet goroutines; run waits for them.
	wg sync.WaitGroup

	// passes counts finished rounds of the loop that stepped tablets
	// (tests wait on it); fullPasses counts those that walked the index.
	passes, fullPasses atomic.Int64
	// missing counts loads answered DATA_LOSS (a tablet's files are gone).
	missing atomic.Int64
	// audited counts confirmed tablets the audit found not served.
	audited atomic.Int64
	// loadGen moves whenever what loaded answers may have changed (a load
	// started or ended, a confirmation forgotten): the balancer's idle
	// check (balance_idle.go).
	loadGen atomic.Int64
	// auditing is set while an audit runs (one at a time).
	auditing atomic.Bool
	// auditNow, when a test sends on it, runs an audit at once.
	auditNow chan struct{}

	// mu protects loads, due, dirty and servers.
	mu sync.Mutex
	// loads is what this term knows of each tablet key's loading.
	loads map[string]*loadState
	// due holds the tablets to step again at a time (retries, backoffs,
	// leases being waited for); wakeDue is signalled when it changes.
	due     dueHeap
	wakeDue chan struct{}
	// dirty are tablets to step soon that the index did not report
	// (the audit's findings, unconfirm).
	dirty map[tabletRef]struct{}
	// servers are the live servers as last read from servers/.
	servers map[string]meta.ServerRecord

	// Owned only by the loop: how many tablets each live server holds,
	// and which server each tablet key was counted for.
	counts map[string]int
	owner  map[string]string
}

type loadState struct {
	ref      tabletRef
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
	// wrote is the ModRevision of this term's assignment of the tablet
	// (startAssign): an index record older than that is stale.
	wrote int64
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
		kick:      make(chan struct{}, 1),
		auditNow:  make(chan struct{}, 1),
		wakeDue:   make(chan struct{}, 1),
		sem:       make(chan struct{}, maxConcurrentLoads),
		assignSem: make(chan struct{}, maxConcurrentAssigns),
		loads:     map[string]*loadState{},
		dirty:     map[tabletRef]struct{}{},
		counts:    map[string]int{},
		owner:     map[string]string{},
	}
}

// poke asks for a pass over the whole index soon; it never blocks.
func (a *assigner) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// touch asks for r to be stepped soon.
func (a *assigner) touch(r tabletRef) {
	a.mu.Lock()
	a.dirty[r] = struct{}{}
	a.mu.Unlock()
	signal(a.wakeDue)
}

// schedule asks for r to be stepped at t; mu is held.
func (a *assigner) scheduleLocked(r tabletRef, t time.Time) {
	wake := len(a.due) == 0 || t.Before(a.due[0].at)
	heap.Push(&a.due, dueEntry{at: t, ref: r})
	if wake {
		signal(a.wakeDue)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// unconfirm forgets that the tablet at key was loaded, so that it is
// loaded again.
func (a *assigner) unconfirm(key string) {
	table, id, ok := a.m.layout.TabletFromKey(key)
	if !ok {
		return
	}
	a.mu.Lock()
	if st := a.loads[key]; st != nil {
		st.confirmed = false
		a.loadGen.Add(1)
	}
	a.mu.Unlock()
	a.touch(tabletRef{table, id})
}

// run steps tablets as the index reports them changed, as their due times
// come and as the servers change, until the term ends; then it waits for
// its loads.
func (a *assigner) run() {
	defer a.wg.Wait()
	ctx := a.term.ctx
	cli, l := a.m.cli, a.m.layout
	feed := a.m.index.subscribe()
	defer a.m.index.unsubscribe(feed)
	ws := meta.WatchServers(ctx, cli, l)
	var reopen <-chan time.Time // set while the servers' watch waits to be re-opened
	serversOK := a.readServers(ctx)
	var serversRetryC <-chan time.Time
	// The first pass sees every write committed before the term began.
	a.m.index.sync(ctx)
	resync := time.NewTicker(resyncInterval)
	defer resync.Stop()
	auditTick := time.NewTicker(auditInterval)
	defer auditTick.Stop()
	dueTimer := time.NewTimer(time.Hour)
	defer dueTimer.Stop()
	full := false
	var pending []tabletRef // tablets kept while servers/ cannot be read
	for {
		keys, fed := feed.take()
		full = full || fed
		a.mu.Lock()
		now := time.Now()
		for len(a.due) > 0 && !a.due[0].at.After(now) {
			keys = append(keys, heap.Pop(&a.due).(dueEntry).ref)
		}
		for r := range a.dirty {
			keys = append(keys, r)
		}
		clear(a.dirty)
		wait := time.Hour
		if len(a.due) > 0 {
			wait = a.due[0].at.Sub(now)
		}
		a.mu.Unlock()
		switch {
		case !serversOK:
			// Without the live servers nothing can be decided: keep the
			// work until they are read.
			pending = append(pending, keys...)
			if serversRetryC == nil {
				serversRetryC = time.After(serversRetry)
			}
		case full:
			full, pending = false, nil
			a.fullPass(ctx)
		case len(keys)+len(pending) > 0:
			a.stepKeys(ctx, append(pending, keys...))
			pending = nil
		}
		dueTimer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-auditTick.C:
			a.startAudit(ctx)
		case <-a.auditNow:
			a.startAudit(ctx)
		case _, ok := <-ws:
			if !ok {
				// Re-open after a short delay, not in a tight loop
				// against an etcd that keeps failing.
				ws, reopen = nil, time.After(serversRetry)
				continue
			}
			serversOK, full = a.serversChanged(ctx, serversOK, full)
		case <-reopen:
			reopen = nil
			ws = meta.WatchServers(ctx, cli, l)
			// A change may have slipped between the two watches.
			serversOK, full = a.serversChanged(ctx, serversOK, full)
		case <-serversRetryC:
			serversRetryC = nil
			serversOK, full = a.serversChanged(ctx, serversOK, full)
		case <-feed.wake:
		case <-a.wakeDue:
		case <-dueTimer.C:
		case <-a.kick:
			full = true
		case <-resync.C:
			full = true
		}
	}
}

// serversChanged reads servers/ again; a changed set of live servers asks
// for a full pass (tablets of a server gone wait for its lease; a new
// server changes placement).
func (a *assigner) serversChanged(ctx context.Context, wasOK, full bool) (ok, fullNow bool) {
	a.mu.Lock()
	before := a.servers
	a.mu.Unlock()
	if !a.readServers(ctx) {
		return false, full
	}
	a.mu.Lock()
	same := maps.Equal(before, a.servers)
	a.mu.Unlock()
	return true, full || !same || !wasOK
}

// readServers reads the live servers into a.servers; undecodable records
// are logged and skipped.
func (a *assigner) readServers(ctx context.Context) bool {
	srvs, err := meta.ListServers(ctx, a.m.cli, a.m.layout, func(key string, err error) {
		a.m.log.Warn("skipping server record", "key", key, "err", err)
	})
	if err != nil {
		if ctx.Err() == nil {
			a.m.log.Warn("reading servers", "err", err)
		}
		return false
	}
	m := make(map[string]meta.ServerRecord, len(srvs))
	live := make(map[string]bool, len(srvs))
	for _, s := range srvs {
		m[s.ID] = s
		live[s.Address] = true
	}
	a.m.conns.retain(live)
	a.m.counters.serversLive.Store(int64(len(m)))
	a.mu.Lock()
	a.servers = m
	a.mu.Unlock()
	return true
}

// view returns the live servers as a snapshot for owned, pick and
// previousOwnerStopped (its tablets are not filled in).
func (a *assigner) view() *snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return &snapshot{servers: a.servers}
}

// fullPass recounts every live server's tablets and steps every tablet of
// the index.
func (a *assigner) fullPass(ctx context.Context) {
	snap := a.view()
	type item struct {
		t      *meta.VersionedTablet
		schema *tabulapb.TableSchema
	}
	var items []item
	if !a.m.index.each(func(t *meta.VersionedTablet, s *tabulapb.TableSchema) { items = append(items, item{t, s}) }) {
		return // not built yet: its build marks the feed full
	}
	clear(a.counts)
	clear(a.owner)
	for id := range snap.servers {
		a.counts[id] = 0
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		key := a.m.layout.TabletKey(it.t.Table, it.t.ID)
		seen[key] = true
		a.recount(snap, key, &it.t.TabletRecord, it.t.ModRevision)
	}
	leaseGone := map[int64]bool{}
	for _, it := range items {
		a.step(ctx, snap, it.t, it.schema, leaseGone)
	}
	a.mu.Lock()
	for key, st := range a.loads {
		if !seen[key] && !st.inflight {
			delete(a.loads, key)
		}
	}
	a.mu.Unlock()
	a.fullPasses.Add(1)
	a.passes.Add(1)
}

// stepKeys steps the given tablets, each on its own.
func (a *assigner) stepKeys(ctx context.Context, refs []tabletRef) {
	snap := a.view()
	leaseGone := map[int64]bool{}
	done := make(map[tabletRef]bool, len(refs))
	for _, r := range refs {
		if done[r] || ctx.Err() != nil {
			continue
		}
		done[r] = true
		t, schema := a.m.index.tablet(r)
		key := a.m.layout.TabletKey(r.table, r.id)
		if t == nil {
			a.recount(snap, key, nil, 0)
			a.mu.Lock()
			if st := a.loads[key]; st != nil && !st.inflight {
				delete(a.loads, key)
			}
			a.mu.Unlock()
			continue
		}
		a.recount(snap, key, &t.TabletRecord, t.ModRevision)
		a.step(ctx, snap, t, schema, leaseGone)
	}
	a.passes.Add(1)
}

// recount moves key's count to the server that now owns t (nil: none),
// t being the record at ModRevision rev. While this term's assignment of
// the tablet is in flight, or t is older than it (the index has not caught
// up), the tablet stays counted for the assignment's target: counted from
// the older record instead (a pass over the whole index, a step of the
// tablet), the target looks emptier than it is and gets more than its
// share of the tablets placed meanwhile.
func (a *assigner) recount(snap *snapshot, key string, t *meta.TabletRecord, rev int64) {
	now := ""
	if t != nil {
		if target, ok := a.assigning(key, rev); ok {
			now = target
		} else if srv, ok := snap.owned(t); ok {
			now = srv.ID
		}
	}
	old, had := a.owner[key]
	if had && old == now {
		return
	}
	if had && old != "" {
		a.counts[old]--
	}
	if now == "" {
		delete(a.owner, key)
		return
	}
	a.owner[key] = now
	a.counts[now]++
}

// assigning returns the server this term is assigning key to, if its
// assignment is in flight or newer than the record at rev.
func (a *assigner) assigning(key string, rev int64) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.loads[key]
	if st == nil || st.server == "" || !(st.inflight || rev < st.wrote) {
		return "", false
	}
	return st.server, true
}

// step decides one tablet: it is left alone, loaded, or (re)assigned and
// loaded. Whatever must be looked at again later is put in the due heap.
func (a *assigner) step(ctx context.Context, snap *snapshot, vt *meta.VersionedTablet, schema *tabulapb.TableSchema, leaseGone map[int64]bool) {
	if ctx.Err() != nil || schema == nil || schema.GetState() == meta.TableDeleting {
		return
	}
	t := *vt
	ref := tabletRef{t.Table, t.ID}
	key := a.m.layout.TabletKey(t.Table, t.ID)
	now := time.Now()
	a.mu.Lock()
	st := a.loads[key]
	if st == nil {
		st = &loadState{ref: ref}
		a.loads[key] = st
	}
	if st.inflight {
		a.mu.Unlock()
		return // its load's end steps it again
	}
	if t.ModRevision < st.wrote {
		// The index has not caught up with this term's own assignment
		// yet (its feed steps the tablet again when it has): acting on
		// the older record would assign it once more, in vain.
		a.mu.Unlock()
		return
	}
	if st.epoch != t.Epoch || st.server != t.Server {
		*st = loadState{ref: ref} // a new assignment: forget the old one's history
	}
	srv, ok := snap.owned(&t.TabletRecord)
	reassign, exclude, load, handOn, checkLease := false, "", false, false, false
	switch {
	case !ok:
		checkLease = true
	case t.State == meta.StateSplitting:
	case st.confirmed:
	case now.Before(st.next):
		a.scheduleLocked(ref, st.next)
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
		if !stopped {
			a.mu.Lock()
			a.scheduleLocked(ref, now.Add(leaseRecheck))
			a.mu.Unlock()
		}
	}
	if handOn {
		// The owner keeps failing to load it: take it back with a
		// confirmed unload before giving it to someone else.
		if err := a.m.unloadFrom(ctx, &t.TabletRecord); err != nil {
			a.m.log.Warn("taking back a tablet that fails to load", "tablet", key, "server", t.Server, "err", err)
			a.mu.Lock()
			st.next = time.Now().Add(loadBackoff(st.failures))
			a.scheduleLocked(ref, st.next)
			a.mu.Unlock()
			return
		}
		reassign, exclude = true, t.Server
	}
	switch {
	case reassign:
		to, ok := snap.pick(a.counts, exclude)
		if !ok {
			return // no live server: a server's arrival makes a full pass
		}
		a.startAssign(ctx, snap, key, t, to, schema, exclude != "")
	case load:
		a.startLoad(ctx, key, t.TabletRecord, schema, srv)
	}
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

// startAssign assigns t to srv and then tells srv to load it, in the
// background: the etcd transaction is not waited for on the loop, so that
// a dead server's tablets are handed on by up to maxConcurrentAssigns
// transactions at once instead of one round trip after another (a real
// server's 10,000 tablets took 29 s to assign one by one:
// docs/BENCHMARKS.md "The master at 100,000 tablets"). The loop counts
// the tablet for srv at once (its next pick must see it); should the
// transaction fail, the tablet is stepped again and recounted from its
// record. handOn: taken back from a server that kept failing to load it.
func (a *assigner) startAssign(ctx context.Context, snap *snapshot, key string, t meta.VersionedTablet, srv meta.ServerRecord, schema *tabulapb.TableSchema, handOn bool) {
	guess := t.TabletRecord
	guess.Server, guess.Address, guess.Lease, guess.State, guess.Epoch = srv.ID, srv.Address, srv.Lease, meta.StateAssigned, t.Epoch+1
	a.recount(snap, key, &guess, math.MaxInt64) // newer than any record: counted as it says
	st := a.beginLoad(key, guess)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		next, err := a.assign(ctx, t, srv)
		if err != nil {
			if ctx.Err() == nil {
				a.m.log.Info("assigning tablet", "tablet", key, "err", err)
			}
			// A conflict comes back through the index's feed as well;
			// anything else is tried again.
			a.mu.Lock()
			defer a.mu.Unlock()
			st.inflight = false
			a.loadGen.Add(1)
			a.scheduleLocked(st.ref, time.Now().Add(loadBackoff(1)))
			return
		}
		a.mu.Lock()
		st.wrote = next.ModRevision
		a.mu.Unlock()
		a.m.counters.assigned(t.Server != "" && !handOn)
		kind := "assign" // a new tablet, or one nobody held
		if t.Server != "" {
			kind = "reassign" // its server died or kept failing to load it
		}
		a.m.log.Info("assigned tablet", "event", kind, "tablet", key, "server", srv.ID, "epoch", next.Epoch, "from", t.Server)
		req := &tabulapb.LoadTabletRequest{Tablet: next.ToProto(), Schema: a.m.serverSchema(schema)}
		a.endLoad(ctx, st, key, srv, next.Epoch, a.load(ctx, srv.Address, req))
	}()
}

// assign runs meta.Assign, at most maxConcurrentAssigns at once.
func (a *assigner) assign(ctx context.Context, t meta.VersionedTablet, srv meta.ServerRecord) (meta.VersionedTablet, error) {
	select {
	case a.assignSem <- struct{}{}:
		defer func() { <-a.assignSem }()
	case <-ctx.Done():
		return meta.VersionedTablet{}, ctx.Err()
	}
	return meta.Assign(ctx, a.m.cli, a.m.layout, t, srv, a.term.guard())
}

// beginLoad marks the tablet at key in flight for a load of t.
func (a *assigner) beginLoad(key string, t meta.TabletRecord) *loadState {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.loads[key]
	if st == nil {
		st = &loadState{}
		a.loads[key] = st
	}
	if st.epoch != t.Epoch || st.server != t.Server {
		*st = loadState{epoch: t.Epoch, server: t.Server}
	}
	st.inflight = true
	a.loadGen.Add(1)
	st.ref = tabletRef{t.Table, t.ID}
	return st
}

// startLoad tells srv to load t at t.Epoch, in the background.
func (a *assigner) startLoad(ctx context.Context, key string, t meta.TabletRecord, schema *tabulapb.TableSchema, srv meta.ServerRecord) {
	st := a.beginLoad(key, t)
	req := &tabulapb.LoadTabletRequest{Tablet: t.ToProto(), Schema: a.m.serverSchema(schema)}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.endLoad(ctx, st, key, srv, t.Epoch, a.load(ctx, srv.Address, req))
	}()
}

// endLoad records how the load of st's tablet at epoch on srv ended.
func (a *assigner) endLoad(ctx context.Context, st *loadState, key string, srv meta.ServerRecord, epoch int64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.inflight = false
	a.loadGen.Add(1)
	// The record may have changed while the load ran (its feed
	// events found it in flight): step it again either way.
	defer func() { a.scheduleLocked(st.ref, st.next) }()
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
				"tablet", key, "server", srv.ID, "epoch", epoch, "err", err)
		}
		return
	}
	st.missing = false
	st.refused = status.Code(err) == codes.FailedPrecondition
	st.failures++
	st.next = time.Now().Add(loadBackoff(st.failures))
	if ctx.Err() == nil {
		a.m.log.Warn("LoadTablet failed", "tablet", key, "server", srv.ID, "epoch", epoch, "failures", st.failures, "err", err)
	}
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
