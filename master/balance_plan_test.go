package master

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var planSeed = flag.Uint64("plan-seed", 0, "seed of the randomized planner tests (0: pick one and log it)")

func planRand(t *testing.T) *rand.Rand {
	seed := *planSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -plan-seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0xba1a))
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// evenTablets puts n equal tablets (no size or load reported) on server.
func evenTablets(table, server string, n int) []PlanTablet {
	var ts []PlanTablet
	for i := range n {
		ts = append(ts, PlanTablet{Table: table, ID: fmt.Sprintf("%s-%03d", table, i), Server: server})
	}
	return ts
}

// apply moves the plan's tablets and remembers the moves at now.
func apply(in *PlanInput, p Plan) {
	if in.Recent == nil {
		in.Recent = map[string]LastMove{}
	}
	for _, m := range p.Moves {
		for i := range in.Tablets {
			if in.Tablets[i].Table == m.Table && in.Tablets[i].ID == m.ID {
				in.Tablets[i].Server = m.To
			}
		}
		in.Recent[tabletKey(m.Table, m.ID)] = LastMove{At: in.Now, From: m.From}
	}
}

func counts(in PlanInput) map[string]int {
	c := map[string]int{}
	for _, s := range in.Servers {
		c[s] = 0
	}
	for _, t := range in.Tablets {
		c[t.Server]++
	}
	return c
}

func countSpread(in PlanInput) int {
	lo, hi := math.MaxInt, 0
	for _, n := range counts(in) {
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi - lo
}

// runRounds plans and applies rounds every interval until a round plans
// nothing; it returns how many moves each tablet made.
func runRounds(t *testing.T, in *PlanInput, interval time.Duration, maxRounds int) map[string]int {
	t.Helper()
	per := map[string]int{}
	for r := 0; r < maxRounds; r++ {
		p := PlanMoves(*in)
		if len(p.Moves) == 0 {
			return per
		}
		for _, m := range p.Moves {
			per[tabletKey(m.Table, m.ID)]++
		}
		apply(in, p)
		in.Now = in.Now.Add(interval)
	}
	t.Fatalf("no fixpoint after %d rounds: %v", maxRounds, counts(*in))
	return nil
}

// TestPlanSpreadsTabletsOfOneServer: 12 tablets on one of three servers
// spread 4/4/4, at most MaxMoves per round, each tablet moved once.
func TestPlanSpreadsTabletsOfOneServer(t *testing.T) {
	in := PlanInput{Servers: []string{"s1", "s2", "s3"}, Tablets: evenTablets("t", "s1", 12), Now: t0,
		Config: PlanConfig{MaxMoves: 5}}
	p := PlanMoves(in)
	if len(p.Moves) != 5 {
		t.Fatalf("round 1 planned %d moves, want the limit 5", len(p.Moves))
	}
	per := runRounds(t, &in, 15*time.Second, 10)
	if c := counts(in); c["s1"] != 4 || c["s2"] != 4 || c["s3"] != 4 {
		t.Fatalf("after balancing: %v", c)
	}
	for k, n := range per {
		if n > 1 {
			t.Errorf("tablet %s moved %d times", k, n)
		}
	}
}

// TestPlanJoiningServerGetsItsShare: a fourth, empty server joins a
// balanced cluster and gets a quarter of the tablets; nobody else moves.
func TestPlanJoiningServerGetsItsShare(t *testing.T) {
	var ts []PlanTablet
	for i, s := range []string{"s1", "s2", "s3"} {
		for _, tb := range evenTablets(fmt.Sprint("t", i), s, 8) {
			tb.SizeBytes, tb.HasSize, tb.Load, tb.HasLoad = 100<<20, true, 30, true
			ts = append(ts, tb)
		}
	}
	in := PlanInput{Servers: []string{"s1", "s2", "s3"}, Tablets: ts, Now: t0}
	if p := PlanMoves(in); len(p.Moves) != 0 {
		t.Fatalf("a balanced cluster planned %v", p.Moves)
	}
	in.Servers = append(in.Servers, "s4")
	p := PlanMoves(in)
	for _, m := range p.Moves {
		if m.To != "s4" {
			t.Errorf("move %+v does not go to the new server", m)
		}
	}
	runRounds(t, &in, 15*time.Second, 10)
	if c := counts(in); c["s4"] != 6 {
		t.Fatalf("the new server holds %d tablets, want 6: %v", c["s4"], c)
	}
}

// TestPlanMovesLoad: equal counts, but all load on one server's tablets:
// hot tablets move until the costs are even. The cost is one sum, so the
// balancer trades count for load: the server left with more load holds
// fewer tablets (docs/OPERATIONS.md "Balancing").
func TestPlanMovesLoad(t *testing.T) {
	var ts []PlanTablet
	for i, s := range []string{"s1", "s2"} {
		for _, tb := range evenTablets(fmt.Sprint("t", i), s, 6) {
			tb.HasLoad, tb.HasSize = true, true
			if s == "s1" {
				tb.Load = 1000
			}
			ts = append(ts, tb)
		}
	}
	in := PlanInput{Servers: []string{"s1", "s2"}, Tablets: ts, Now: t0}
	runRounds(t, &in, time.Minute, 20)
	hot, load := map[string]int{}, map[string]float64{}
	for _, tb := range in.Tablets {
		load[tb.Server] += tb.Load
		if tb.Load > 0 {
			hot[tb.Server]++
		}
	}
	// Costs 1/6 per tablet + load/3000: 4 hot on s1 (2.0), 2 hot and 6 cold on s2 (2.0).
	if hot["s1"] != 4 || hot["s2"] != 2 || load["s1"] != 4000 {
		t.Fatalf("hot tablets per server %v (load %v), want 4 and 2", hot, load)
	}
	if p := PlanMoves(in); p.Spread > 1e-9 {
		t.Fatalf("cost spread %v after balancing, want 0: %v", p.Spread, p.Costs)
	}
}

// TestPlanLeavesFixedTabletsAndRespectsCooldown: fixed tablets (splitting,
// switched off, ...) never move; a recently moved tablet waits out its
// cooldown; a tablet never returns to the server it just left.
func TestPlanLeavesFixedTabletsAndRespectsCooldown(t *testing.T) {
	ts := evenTablets("t", "s1", 4)
	ts[0].Fixed, ts[1].Fixed = "balancing is off for the table", "splitting"
	in := PlanInput{Servers: []string{"s1", "s2"}, Tablets: ts, Now: t0,
		Recent: map[string]LastMove{
			tabletKey("t", ts[2].ID): {At: t0.Add(-2 * time.Minute), From: "s3"}, // in cooldown
			tabletKey("t", ts[3].ID): {At: t0.Add(-6 * time.Minute), From: "s2"}, // would go back
		}}
	if p := PlanMoves(in); len(p.Moves) != 0 {
		t.Fatalf("planned %+v; every tablet is fixed, cooling down or would go back", p.Moves)
	}
	in.Now = t0.Add(3 * time.Minute) // ts[2]'s cooldown is over; ts[3] still may not go back (9 min < 10)
	p := PlanMoves(in)
	if len(p.Moves) != 1 || p.Moves[0].ID != ts[2].ID || p.Moves[0].To != "s2" {
		t.Fatalf("planned %+v, want %s to s2", p.Moves, ts[2].ID)
	}
	in.Now = t0.Add(2 * time.Hour) // past NoReturn: both may go
	if p := PlanMoves(in); len(p.Moves) != 2 {
		t.Fatalf("planned %+v, want both unfixed tablets", p.Moves)
	}
}

// TestPlanHysteresis: servers whose costs differ by less than the margin
// are left alone, whatever the noise in their loads.
func TestPlanHysteresis(t *testing.T) {
	r := planRand(t)
	for trial := 0; trial < 200; trial++ {
		var ts []PlanTablet
		for i, s := range []string{"s1", "s2", "s3"} {
			for _, tb := range evenTablets(fmt.Sprint("t", i), s, 40) {
				// Each tablet ±20% around 100 req/s: the server sums
				// differ by ~3%, inside the 5% margin.
				tb.Load, tb.HasLoad = 100*(0.8+0.4*r.Float64()), true
				ts = append(ts, tb)
			}
		}
		in := PlanInput{Servers: []string{"s1", "s2", "s3"}, Tablets: ts, Now: t0}
		if p := PlanMoves(in); len(p.Moves) != 0 {
			t.Fatalf("trial %d: noise moved %d tablets (spread %.3f, mean %.3f)", trial, len(p.Moves), p.Spread, p.MeanCost)
		}
	}
}

// TestPlanRandomInvariants plans random clusters and checks every move:
// it narrows the pair it moves between and never widens the spread, its
// source costs more than the mean, it
// lowers the sum of squared costs, the costs it reports are the
// recomputed ones, it respects the limit, the fixed tablets, the cooldown
// and the no-return rule, and no tablet moves twice in a round.
func TestPlanRandomInvariants(t *testing.T) {
	r := planRand(t)
	for trial := 0; trial < 500; trial++ {
		in := randomInput(r)
		p := PlanMoves(in)
		cfg := in.Config.filled()
		if len(p.Moves) > cfg.MaxMoves {
			t.Fatalf("trial %d: %d moves over the limit %d", trial, len(p.Moves), cfg.MaxMoves)
		}
		costs := recomputeCosts(in)
		seen := map[string]bool{}
		for _, m := range p.Moves {
			k := tabletKey(m.Table, m.ID)
			if seen[k] {
				t.Fatalf("trial %d: %s moved twice in a round", trial, k)
			}
			seen[k] = true
			tb := findTablet(in, m.Table, m.ID)
			if tb.Fixed != "" || tb.Server != m.From {
				t.Fatalf("trial %d: moved %+v (fixed %q, on %s)", trial, m, tb.Fixed, tb.Server)
			}
			if last, ok := in.Recent[k]; ok {
				if in.Now.Sub(last.At) < cfg.Cooldown || (last.From == m.To && in.Now.Sub(last.At) < cfg.NoReturn) {
					t.Fatalf("trial %d: moved %s again: last %+v, now %v, to %s", trial, k, last, in.Now, m.To)
				}
			}
			const eps = 1e-9
			if !near(costs[m.From], m.FromBefore) || !near(costs[m.To], m.ToBefore) {
				t.Fatalf("trial %d: move %+v reports costs %v/%v, recomputed %v/%v", trial, m, m.FromBefore, m.ToBefore, costs[m.From], costs[m.To])
			}
			before := sumSquares(costs)
			spreadBefore := spreadOf(costs)
			costs[m.From] -= m.Weight
			costs[m.To] += m.Weight
			if costs[m.From] >= m.FromBefore || costs[m.To] <= m.ToBefore ||
				costs[m.From] < m.ToBefore-eps || costs[m.To] > m.FromBefore+eps {
				t.Fatalf("trial %d: move %+v does not narrow its pair", trial, m)
			}
			if spreadOf(costs) > spreadBefore+eps || !near(spreadOf(costs), m.SpreadAfter) {
				t.Fatalf("trial %d: move %+v widened the spread %v -> %v", trial, m, spreadBefore, spreadOf(costs))
			}
			if sumSquares(costs) >= before {
				t.Fatalf("trial %d: move %+v did not lower the sum of squares", trial, m)
			}
			if m.FromBefore <= p.MeanCost {
				t.Fatalf("trial %d: move %+v from a server not above the mean %v", trial, m, p.MeanCost)
			}
			if m.FromBefore-m.ToBefore-m.Weight <= cfg.Margin*p.MeanCost {
				t.Fatalf("trial %d: move %+v within the margin %v", trial, m, cfg.Margin*p.MeanCost)
			}
		}
	}
}

// TestPlanConvergesWithoutOscillation: random start, equal tablets, rounds
// every 15 s with the default cooldown: a fixpoint with a count spread of
// at most one (the margin allows more only past 20 tablets per server),
// and then, time passing, no more moves.
func TestPlanConvergesWithoutOscillation(t *testing.T) {
	r := planRand(t)
	for trial := 0; trial < 100; trial++ {
		ns := 2 + r.IntN(6)
		in := PlanInput{Now: t0}
		for i := range ns {
			in.Servers = append(in.Servers, fmt.Sprint("s", i))
		}
		nt := r.IntN(19 * ns)
		for i := range nt {
			// Skewed start: most on the first servers.
			s := in.Servers[min(r.IntN(ns), r.IntN(ns))]
			tb := PlanTablet{Table: "t", ID: fmt.Sprintf("%04d", i), Server: s, SizeBytes: 1 << 30, HasSize: true, Load: 500, HasLoad: true}
			in.Tablets = append(in.Tablets, tb)
		}
		per := runRounds(t, &in, 15*time.Second, 1000)
		if s := countSpread(in); s > 1 {
			t.Fatalf("trial %d: fixpoint with count spread %d: %v", trial, s, counts(in))
		}
		for k, n := range per {
			if n > 2 {
				t.Errorf("trial %d: tablet %s moved %d times converging", trial, k, n)
			}
		}
		for range 100 {
			in.Now = in.Now.Add(15 * time.Second)
			if p := PlanMoves(in); len(p.Moves) != 0 {
				t.Fatalf("trial %d: moves after the fixpoint: %+v", trial, p.Moves)
			}
		}
	}
}

// TestPlanLargeClusterSpread: past 20 tablets per server the margin lets
// counts differ by up to margin*meanCount+1.
func TestPlanLargeClusterSpread(t *testing.T) {
	in := PlanInput{Servers: []string{"a", "b", "c"}, Tablets: evenTablets("t", "a", 3000), Now: t0,
		Config: PlanConfig{MaxMoves: 5000, Cooldown: time.Nanosecond}}
	runRounds(t, &in, time.Second, 10)
	bound := int(DefaultPlanConfig.Margin*1000) + 1
	if s := countSpread(in); s > bound {
		t.Fatalf("count spread %d > %d: %v", s, bound, counts(in))
	}
}

func randomInput(r *rand.Rand) PlanInput {
	ns := 1 + r.IntN(7)
	in := PlanInput{Now: t0.Add(time.Duration(r.IntN(7200)) * time.Second), Recent: map[string]LastMove{},
		Config: PlanConfig{MaxMoves: 1 + r.IntN(12), Margin: []float64{0, 0.01, 0.05, 0.2}[r.IntN(4)]}}
	for i := range ns {
		in.Servers = append(in.Servers, fmt.Sprint("s", i))
	}
	nt := r.IntN(120)
	for i := range nt {
		s := in.Servers[min(r.IntN(ns), r.IntN(ns))]
		if r.IntN(20) == 0 {
			s = "dead" // not a live server: ignored
		}
		tb := PlanTablet{Table: fmt.Sprint("t", r.IntN(3)), ID: fmt.Sprintf("%04d", i), Server: s}
		if r.IntN(4) > 0 {
			tb.SizeBytes, tb.HasSize = r.Int64N(1<<31), true
		}
		if r.IntN(4) > 0 {
			tb.Load, tb.HasLoad = r.Float64()*r.Float64()*2000, true
		}
		if r.IntN(10) == 0 {
			tb.Fixed = "fixed"
		}
		if r.IntN(5) == 0 {
			in.Recent[tabletKey(tb.Table, tb.ID)] = LastMove{At: t0.Add(time.Duration(r.IntN(7200)) * time.Second), From: in.Servers[r.IntN(ns)]}
		}
		in.Tablets = append(in.Tablets, tb)
	}
	return in
}

// recomputeCosts is the cost function written out plainly (the
// planner's doc comment), to check the planner's bookkeeping.
func recomputeCosts(in PlanInput) map[string]float64 {
	cfg := in.Config.filled()
	live := map[string]bool{}
	for _, s := range in.Servers {
		live[s] = true
	}
	var ts []PlanTablet
	for _, t := range in.Tablets {
		if live[t.Server] {
			ts = append(ts, t)
		}
	}
	var sz, ld, nsz, nld float64
	for _, t := range ts {
		if t.HasSize {
			sz += float64(t.SizeBytes)
			nsz++
		}
		if t.HasLoad {
			ld += t.Load
			nld++
		}
	}
	avgS, avgL := 0.0, 0.0
	if nsz > 0 {
		avgS = sz / nsz
	}
	if nld > 0 {
		avgL = ld / nld
	}
	n := float64(len(live))
	meanC := math.Max(float64(len(ts))/n, 1)
	meanS := math.Max((sz+avgS*(float64(len(ts))-nsz))/n, float64(cfg.SizeFloor))
	meanL := math.Max((ld+avgL*(float64(len(ts))-nld))/n, cfg.LoadFloor)
	costs := map[string]float64{}
	for s := range live {
		costs[s] = 0
	}
	for _, t := range ts {
		s, l := avgS, avgL
		if t.HasSize {
			s = float64(t.SizeBytes)
		}
		if t.HasLoad {
			l = t.Load
		}
		costs[t.Server] += cfg.CountWeight/meanC + cfg.SizeWeight*s/meanS + cfg.LoadWeight*l/meanL
	}
	return costs
}

func findTablet(in PlanInput, table, id string) PlanTablet {
	for _, t := range in.Tablets {
		if t.Table == table && t.ID == id {
			return t
		}
	}
	return PlanTablet{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(a)) }

func sumSquares(c map[string]float64) float64 {
	var s float64
	for _, v := range c {
		s += v * v
	}
	return s
}

func spreadOf(c map[string]float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range c {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi - lo
}

// TestPlanJoinAfterARebalance: 12 tablets were just spread from s1 to s2
// and s3 (those 8 are cooling down) when s4 joins. s1 gives one tablet,
// not two (it would fall below the mean and need refilling from s2 later,
// which the no-return rule forbids); once the cooldown is over s2 and s3
// give one each: 3/3/3/3 with no tablet moved twice.
func TestPlanJoinAfterARebalance(t *testing.T) {
	in := PlanInput{Servers: []string{"s1", "s2", "s3", "s4"}, Now: t0, Recent: map[string]LastMove{}}
	in.Tablets = append(in.Tablets, evenTablets("a", "s1", 4)...)
	for _, s := range []string{"s2", "s3"} {
		for _, tb := range evenTablets("b"+s, s, 4) {
			in.Tablets = append(in.Tablets, tb)
			in.Recent[tabletKey(tb.Table, tb.ID)] = LastMove{At: t0.Add(-time.Minute), From: "s1"}
		}
	}
	p := PlanMoves(in)
	if len(p.Moves) != 1 || p.Moves[0].From != "s1" || p.Moves[0].To != "s4" {
		t.Fatalf("planned %+v, want one move s1 -> s4", p.Moves)
	}
	apply(&in, p)
	per := map[string]int{tabletKey(p.Moves[0].Table, p.Moves[0].ID): 1}
	for in.Now.Before(t0.Add(30 * time.Minute)) { // a round every 15 s
		in.Now = in.Now.Add(15 * time.Second)
		p := PlanMoves(in)
		for _, m := range p.Moves {
			per[tabletKey(m.Table, m.ID)]++
			if in.Now.Before(t0.Add(4 * time.Minute)) {
				t.Fatalf("move %+v at %v, while every tablet of s2 and s3 cools down", m, in.Now.Sub(t0))
			}
		}
		apply(&in, p)
		if c := counts(in); c["s1"] == 3 && c["s2"] == 3 && c["s3"] == 3 && c["s4"] == 3 {
			break
		}
	}
	if c := counts(in); c["s1"] != 3 || c["s2"] != 3 || c["s3"] != 3 || c["s4"] != 3 {
		t.Fatalf("after the cooldown: %v", c)
	}
	if d := in.Now.Sub(t0); d > 4*time.Minute+15*time.Second {
		t.Fatalf("balanced only %v after the join; the cooldown ended at 4 min", d)
	}
	for k, n := range per {
		if n > 1 {
			t.Errorf("tablet %s moved %d times", k, n)
		}
	}
}
