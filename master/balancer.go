package master

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/meta"
)

// The automatic balancer (docs/OPERATIONS.md "Balancing"): every
// Options.BalanceInterval the leader plans a round with PlanMoves
// (balance_plan.go) from etcd's tablet map and the latest load report, and
// carries the moves out one at a time with move (unload, then assign at
// epoch+1; the assignment loop loads the tablet on its new server).
//
// The switches live in etcd, so a new leader obeys them: the cluster's
// under meta.Layout.BalancerKey, a table's in its schema
// (balancer_disabled). The memory of recent moves (cooldown, no ping-pong)
// is this process's: a new leader starts without it, which at worst lets a
// tablet the old leader just moved move once more.

const (
	// balancerLogSize is how many moves GetBalancer answers.
	balancerLogSize = 20
	// loadFreshness: a load report older than this many LoadIntervals is
	// not used for load (sizes still are).
	loadFreshness = 3
)

// balancerState is the leader's balancing bookkeeping.
type balancerState struct {
	// round serialises rounds and MoveTablet calls.
	round sync.Mutex
	// kick, when a test sends on it, runs a loop round at once.
	kick chan struct{}

	// mu protects the fields below.
	mu        sync.Mutex
	recent    map[string]LastMove // by tabletKey
	lastRound time.Time
	made      int64
	log       []madeMove // the last balancerLogSize moves, oldest first
	rounds    int64      // loop rounds run (tests wait on it)

	// The idle check (balance_idle.go): the key of the last loop round
	// if it planned nothing, the rounds skipped in a row and in all.
	idleKey      balanceKey
	idleValid    bool
	skippedInRow int
	skipped      int64
}

type madeMove struct {
	Move
	At time.Time
}

// note records a move made at now.
func (b *balancerState) note(m Move, now time.Time, noReturn time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recent == nil {
		b.recent = map[string]LastMove{}
	}
	b.recent[tabletKey(m.Table, m.ID)] = LastMove{At: now, From: m.From}
	b.made++
	b.log = append(b.log, madeMove{Move: m, At: now})
	if len(b.log) > balancerLogSize {
		b.log = b.log[len(b.log)-balancerLogSize:]
	}
	// Forget moves past every rule that uses them.
	for k, lm := range b.recent {
		if now.Sub(lm.At) > noReturn {
			delete(b.recent, k)
		}
	}
}

func (b *balancerState) recentCopy() map[string]LastMove {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]LastMove, len(b.recent))
	for k, v := range b.recent {
		out[k] = v
	}
	return out
}

// planConfig is the planner's configuration from Options.
func (m *Master) planConfig() PlanConfig {
	c := m.opts.plan
	c.MaxMoves = m.opts.BalancerMaxMoves
	c.Cooldown = m.opts.BalancerCooldown
	return c.filled()
}

// balanceTick runs a round if the cluster switch is on (every
// BalanceInterval, and when kicked, while term lasts).
func (m *Master) balanceTick(ctx context.Context, term *leadership) {
	on, err := m.balancerOn(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("reading the balancer switch; skipping this round", "err", err)
		}
		return
	}
	if on {
		now := m.opts.now()
		k, ok := m.balanceKeyNow(ctx, term, now)
		if !m.bal.skipIdle(k, ok, now, m.planConfig().NoReturn) {
			plan, moved, err := m.balanceRound(ctx, term, false)
			if err != nil && ctx.Err() == nil {
				m.log.Warn("balancing round", "err", err)
			}
			m.bal.noteRound(k, ok && err == nil, len(plan.Moves), moved)
		}
	}
	m.bal.mu.Lock()
	m.bal.rounds++
	m.bal.mu.Unlock()
}

// balancerOn reads the cluster switch (absent: on).
func (m *Master) balancerOn(ctx context.Context) (bool, error) {
	return meta.BalancerOn(ctx, m.cli, m.layout)
}

// balanceRound plans a round and, unless dryRun, makes its moves. It
// answers the plan and how many moves succeeded.
func (m *Master) balanceRound(ctx context.Context, term *leadership, dryRun bool) (Plan, int, error) {
	m.bal.round.Lock()
	defer m.bal.round.Unlock()
	snap, err := m.balanceSnapshot(ctx)
	if err != nil {
		return Plan{}, 0, err
	}
	cfg := m.planConfig()
	now := m.opts.now()
	in := m.planInput(snap, term, now, cfg)
	plan := PlanMoves(in)
	if dryRun {
		return plan, 0, nil
	}
	m.bal.mu.Lock()
	m.bal.lastRound = now
	m.bal.mu.Unlock()
	m.log.Debug("balancing round", "servers", len(in.Servers), "tablets", len(in.Tablets),
		"mean_cost", round3(plan.MeanCost), "spread_after_plan", round3(plan.Spread), "planned", len(plan.Moves))
	byKey := make(map[string]meta.VersionedTablet, len(plan.Moves))
	for _, mv := range plan.Moves {
		byKey[tabletKey(mv.Table, mv.ID)] = meta.VersionedTablet{}
	}
	for _, t := range snap.tablets {
		if _, ok := byKey[tabletKey(t.Table, t.ID)]; ok {
			byKey[tabletKey(t.Table, t.ID)] = t
		}
	}
	moved := 0
	for _, mv := range plan.Moves {
		t := byKey[tabletKey(mv.Table, mv.ID)]
		err := m.move(ctx, term, t, snap.servers[mv.To], "reason", mv.Reason,
			"cost_from_before", round3(mv.FromBefore), "cost_from_after", round3(mv.FromAfter),
			"cost_to_before", round3(mv.ToBefore), "cost_to_after", round3(mv.ToAfter),
			"spread_before", round3(mv.SpreadBefore), "spread_after", round3(mv.SpreadAfter))
		if err != nil {
			m.log.Warn("balancer could not move tablet; it stays", "table", mv.Table, "tablet", mv.ID, "from", mv.From, "to", mv.To, "err", err)
			if errors.Is(err, ErrNotLeader) || ctx.Err() != nil {
				break
			}
			continue
		}
		m.bal.note(mv, m.opts.now(), cfg.NoReturn)
		moved++
	}
	if moved > 0 {
		term.assign.poke()
	}
	return plan, moved, ctx.Err()
}

// balanceSnapshot is the cluster for a round: the tablet index's copy once
// it has caught up with etcd (reading 100,000 tablet records from etcd
// costs ~0.7 s of etcd and master CPU; docs/BENCHMARKS.md), else a read
// from etcd. Either is as fresh as a read at the call; a record that
// changes afterwards only makes its move fail its guarded write.
func (m *Master) balanceSnapshot(ctx context.Context) (*snapshot, error) {
	if !m.index.sync(ctx) {
		return m.readSnapshot(ctx)
	}
	at := time.Now()
	servers, err := meta.GetServers(ctx, m.cli, m.layout)
	if err != nil {
		return nil, err
	}
	tables, tablets, rev, ok := m.index.all()
	if !ok {
		return m.readSnapshot(ctx)
	}
	s := &snapshot{servers: make(map[string]meta.ServerRecord, len(servers)), tables: tables, tablets: tablets, rev: rev, at: at}
	for _, r := range servers {
		s.servers[r.ID] = r
	}
	return s, nil
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// planInput turns a snapshot and the latest load report into the
// planner's input.
func (m *Master) planInput(snap *snapshot, term *leadership, now time.Time, cfg PlanConfig) PlanInput {
	in := PlanInput{Now: now, Config: cfg, Recent: m.bal.recentCopy()}
	for id := range snap.servers {
		in.Servers = append(in.Servers, id)
	}
	sort.Strings(in.Servers)
	rep := m.Loads()
	fresh := rep != nil && m.opts.LoadInterval > 0 && now.Sub(rep.At) < loadFreshness*m.opts.LoadInterval
	in.Tablets = make([]PlanTablet, 0, len(snap.tablets))
	for i := range snap.tablets {
		t := &snap.tablets[i]
		srv, ok := snap.owned(&t.TabletRecord)
		if !ok {
			continue // the assignment loop's business, not the balancer's
		}
		pt := PlanTablet{Table: t.Table, ID: t.ID, Server: srv.ID, Fixed: fixedReason(snap, t, term, m.layout)}
		if l, ok := rep.Tablet(t.Table, t.ID); ok {
			pt.SizeBytes, pt.HasSize = l.SizeBytes, true
			if fresh {
				pt.Load, pt.HasLoad = l.RequestsPerSec(), true
			}
		}
		in.Tablets = append(in.Tablets, pt)
	}
	return in
}

// fixedReason says why t must not be moved by the balancer, or "".
func fixedReason(snap *snapshot, t *meta.VersionedTablet, term *leadership, l meta.Layout) string {
	s := snap.tables[t.Table]
	switch {
	case s == nil || s.GetState() == meta.TableDeleting:
		return "table is being deleted"
	case s.GetBalancerDisabled():
		return "balancing is off for the table"
	case t.State == meta.StateSplitting:
		return "splitting"
	case t.State == meta.StateUnassigned:
		return "unassigned"
	case term != nil && !term.assign.loaded(l.TabletKey(t.Table, t.ID), t.Epoch):
		return "not confirmed loaded on its server yet"
	}
	return ""
}

// Balance runs one balancing round now (whatever the cluster switch says:
// it turns off only the automatic loop), or with dry_run only plans it.
func (m *Master) Balance(ctx context.Context, req *tabulapb.BalanceRequest) (*tabulapb.BalanceResponse, error) {
	term, err := m.lead(ctx)
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	plan, moved, err := m.balanceRound(ctx, term, req.GetDryRun())
	resp := &tabulapb.BalanceResponse{Moved: int32(moved)}
	for _, mv := range plan.Moves {
		resp.Moves = append(resp.Moves, mv.proto())
	}
	return resp, toStatus(ctx, err)
}

func (mv Move) proto() *tabulapb.PlannedMove {
	return &tabulapb.PlannedMove{Table: mv.Table, TabletId: mv.ID, FromServer: mv.From, ToServer: mv.To, Reason: mv.Reason}
}

// MoveTablet moves one tablet to a named live server now, whatever the
// switches say (an operator's explicit request).
func (m *Master) MoveTablet(ctx context.Context, req *tabulapb.MoveTabletRequest) (*tabulapb.MoveTabletResponse, error) {
	t, err := m.moveTablet(ctx, req.GetTable(), req.GetTabletId(), req.GetServerId())
	if err != nil {
		return nil, toStatus(ctx, err)
	}
	return &tabulapb.MoveTabletResponse{Tablet: t.ToProto()}, nil
}

func (m *Master) moveTablet(ctx context.Context, table, id, server string) (meta.TabletRecord, error) {
	if err := cell.ValidateTableName(table); err != nil {
		return meta.TabletRecord{}, err
	}
	if id == "" || server == "" {
		return meta.TabletRecord{}, cell.Invalidf("tablet_id and server_id are required (see `tabula table tablets %s` and `tabula servers`)", table)
	}
	term, err := m.lead(ctx)
	if err != nil {
		return meta.TabletRecord{}, err
	}
	m.bal.round.Lock()
	defer m.bal.round.Unlock()
	snap, err := m.readSnapshot(ctx)
	if err != nil {
		return meta.TabletRecord{}, err
	}
	to, ok := snap.servers[server]
	if !ok {
		return meta.TabletRecord{}, notFoundf("tablet server %s is not live (see `tabula servers`)", server)
	}
	if s := snap.tables[table]; s == nil || s.GetState() == meta.TableDeleting {
		return meta.TabletRecord{}, notFoundf("table %s does not exist", table)
	}
	var t *meta.VersionedTablet
	for i := range snap.tablets {
		if snap.tablets[i].Table == table && snap.tablets[i].ID == id {
			t = &snap.tablets[i]
		}
	}
	if t == nil {
		return meta.TabletRecord{}, notFoundf("table %s has no tablet %s (it may have split; see `tabula table tablets %s`)", table, id, table)
	}
	from, owned := snap.owned(&t.TabletRecord)
	switch {
	case owned && from.ID == server:
		return t.TabletRecord, nil // already there
	case !owned || t.State == meta.StateSplitting:
		return meta.TabletRecord{}, notReadyf("tablet %s of table %s is %s, not held by a live server; retry", id, table, t.State)
	}
	if err := m.move(ctx, term, *t, to, "reason", "operator"); err != nil {
		return meta.TabletRecord{}, err
	}
	mv := Move{Table: table, ID: id, From: from.ID, To: server, Reason: "operator"}
	m.bal.note(mv, m.opts.now(), m.planConfig().NoReturn)
	term.assign.poke()
	next, err := meta.GetTablet(ctx, m.cli, m.layout, table, id)
	if err != nil {
		return meta.TabletRecord{}, err
	}
	return next.TabletRecord, nil
}

// SetBalancer sets the cluster's switch (etcd) or a table's (its schema).
func (m *Master) SetBalancer(ctx context.Context, req *tabulapb.SetBalancerRequest) (*tabulapb.SetBalancerResponse, error) {
	return &tabulapb.SetBalancerResponse{}, toStatus(ctx, m.setBalancer(ctx, req.GetTable(), req.GetEnabled()))
}

func (m *Master) setBalancer(ctx context.Context, table string, on bool) error {
	if table != "" {
		_, err := m.changeFamilies(ctx, table, func(s *tabulapb.TableSchema) error {
			s.BalancerDisabled = !on
			return nil
		})
		if err == nil {
			m.log.Info("balancer switched for table", "table", table, "on", on)
		}
		return err
	}
	term, err := m.lead(ctx)
	if err != nil {
		return err
	}
	err = meta.SetBalancer(ctx, m.cli, m.layout, on, term.guard())
	if err != nil && !errors.Is(err, meta.ErrConflict) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: lost leadership while switching the balancer; retry", ErrNotLeader)
	}
	m.log.Info("balancer switched", "on", on)
	return nil
}

// GetBalancer answers the switches and this leader's recent balancing.
func (m *Master) GetBalancer(ctx context.Context, _ *tabulapb.GetBalancerRequest) (*tabulapb.GetBalancerResponse, error) {
	resp, err := m.getBalancer(ctx)
	return resp, toStatus(ctx, err)
}

func (m *Master) getBalancer(ctx context.Context) (*tabulapb.GetBalancerResponse, error) {
	if _, err := m.lead(ctx); err != nil {
		return nil, err
	}
	on, err := m.balancerOn(ctx)
	if err != nil {
		return nil, err
	}
	resp := &tabulapb.GetBalancerResponse{Enabled: on}
	if m.opts.BalanceInterval > 0 {
		resp.IntervalMillis = m.opts.BalanceInterval.Milliseconds()
	}
	tables, _, err := meta.ListTables(ctx, m.cli, m.layout) // undecodable ones disable nothing
	if err != nil {
		return nil, err
	}
	for _, r := range tables {
		if r.Schema.GetBalancerDisabled() && r.Schema.GetState() != meta.TableDeleting {
			resp.DisabledTables = append(resp.DisabledTables, r.Schema.GetName())
		}
	}
	m.bal.mu.Lock()
	defer m.bal.mu.Unlock()
	if !m.bal.lastRound.IsZero() {
		resp.LastRoundMicros = m.bal.lastRound.UnixMicro()
	}
	resp.MovesMade = m.bal.made
	for _, mm := range m.bal.log {
		resp.RecentMoves = append(resp.RecentMoves, &tabulapb.BalancerMove{Move: mm.proto(), AtMicros: mm.At.UnixMicro()})
	}
	return resp, nil
}
