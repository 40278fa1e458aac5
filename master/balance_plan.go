package master

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// The balancer's planner (docs/OPERATIONS.md "Balancing"): a pure function
// from the cluster as the leader sees it to a list of moves. It knows
// nothing of etcd or RPCs, so that it can be tested exhaustively.
//
// Cost. Every tablet gets a weight
//
//	w(t) = CountWeight/meanCount + SizeWeight*size(t)/meanSize + LoadWeight*load(t)/meanLoad
//
// where the means are per server (total / number of servers) and load is
// requests per second (reads + writes). A server's cost is the sum of its
// tablets' weights, so the average server costs about CountWeight +
// SizeWeight + LoadWeight whatever the cluster's size, and a move shifts
// exactly w(t) from one server to the other (the means do not change: a
// move keeps every total). meanSize and meanLoad are floored
// (SizeFloor, LoadFloor) so that an idle or nearly empty cluster is
// balanced by count, not by the noise of a few requests or kilobytes.
//
// A tablet without a reported size or a fresh load (its server did not
// answer, or it was just moved or created) is taken to be an average
// tablet: the mean of the reported ones. A server without a fresh report
// is thereby balanced by count and its tablets' last known sizes.
//
// Moves. Moving t from a to b changes the sum of squared costs by
// 2w(w - (c_a - c_b)); the planner moves t only when
//
//	c_a - c_b - w(t) > Margin * meanCost
//
// which (1) lowers that sum, (2) leaves both servers strictly inside
// [c_b, c_a], so no move widens the spread (max - min cost), and (3) adds
// hysteresis: servers within Margin of each other are left alone, so load
// noise does not shuffle tablets. Only a server costing more than the mean
// gives tablets. Among the eligible tablets of the pair it
// takes the one whose weight is closest to (c_a - c_b)/2, the largest
// improvement. Pairs are tried from the costliest source and the cheapest
// target outwards; at most MaxMoves per round; a tablet moved within
// Cooldown does not move, and one never goes back to the server it left
// within NoReturn (no ping-pong).

// PlanConfig tunes the planner; the zero value of a field means its default
// (DefaultPlanConfig).
type PlanConfig struct {
	// Weights of the three cost terms.
	CountWeight, SizeWeight, LoadWeight float64
	// Margin is the hysteresis, a fraction of the mean server cost.
	Margin float64
	// SizeFloor (bytes per server) and LoadFloor (requests/s per server)
	// bound the size and load means from below.
	SizeFloor int64
	LoadFloor float64
	// MaxMoves bounds the moves of one round.
	MaxMoves int
	// Cooldown: a tablet moved within it does not move again.
	Cooldown time.Duration
	// NoReturn: a tablet never moves back to the server it left within
	// it. The default is twice the Cooldown: long enough that load noise
	// cannot bounce a tablet, short enough that a server a round emptied
	// too far (the cooldown kept the other tablets in place) is refilled.
	NoReturn time.Duration
}

// DefaultPlanConfig is the configuration used when a field is zero.
var DefaultPlanConfig = PlanConfig{
	CountWeight: 1,
	SizeWeight:  1,
	LoadWeight:  1,
	Margin:      0.05,
	SizeFloor:   64 << 20,
	LoadFloor:   50,
	MaxMoves:    10,
	Cooldown:    5 * time.Minute,
}

func (c PlanConfig) filled() PlanConfig {
	d := DefaultPlanConfig
	set := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.CountWeight, d.CountWeight)
	set(&c.SizeWeight, d.SizeWeight)
	set(&c.LoadWeight, d.LoadWeight)
	set(&c.Margin, d.Margin)
	set(&c.LoadFloor, d.LoadFloor)
	if c.SizeFloor == 0 {
		c.SizeFloor = d.SizeFloor
	}
	if c.MaxMoves == 0 {
		c.MaxMoves = d.MaxMoves
	}
	if c.Cooldown == 0 {
		c.Cooldown = d.Cooldown
	}
	if c.NoReturn == 0 {
		c.NoReturn = 2 * c.Cooldown
	}
	return c
}

// PlanTablet is one tablet as the planner sees it.
type PlanTablet struct {
	Table, ID string
	// Server is the live server holding it.
	Server string
	// Fixed, when set, says why the tablet must not move (splitting, not
	// loaded yet, its table's balancing is off, ...). A fixed tablet still
	// counts in its server's cost.
	Fixed string
	// SizeBytes and Load (requests/s) as last reported; HasSize and
	// HasLoad say whether they were (and the load is fresh).
	SizeBytes        int64
	Load             float64
	HasSize, HasLoad bool
}

// LastMove is the planner's memory of a tablet's last move.
type LastMove struct {
	At   time.Time
	From string
}

// PlanInput is everything a round looks at.
type PlanInput struct {
	// Servers are the live servers' ids.
	Servers []string
	Tablets []PlanTablet
	// Recent maps tabletKey(table, id) to the tablet's last move.
	Recent map[string]LastMove
	Now    time.Time
	Config PlanConfig
}

// Move is one planned move.
type Move struct {
	Table, ID, From, To string
	Reason              string
	// Weight is the tablet's cost; the servers' costs before and after.
	Weight                    float64
	FromBefore, ToBefore      float64
	FromAfter, ToAfter        float64
	SpreadBefore, SpreadAfter float64 // max - min cost over all servers
}

// Plan is a round's outcome.
type Plan struct {
	Moves []Move
	// Costs are the servers' costs after the planned moves.
	Costs map[string]float64
	// Spread is max - min of Costs; MeanCost their mean.
	Spread, MeanCost float64
}

// planCand is a movable tablet and its weight.
type planCand struct {
	t *PlanTablet
	w float64
}

// PlanMoves plans one round. It is deterministic: ties are broken by
// server id, then table and tablet id. Its cost is O(T log T) for T
// tablets plus O(S² log T) per move for S servers.
func PlanMoves(in PlanInput) Plan {
	cfg := in.Config.filled()
	n := len(in.Servers)
	plan := Plan{Costs: make(map[string]float64, n)}
	if n == 0 {
		return plan
	}
	live := make(map[string]int, n)
	ids := slices.Clone(in.Servers)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	n = len(ids)
	for i, id := range ids {
		live[id] = i
	}

	// Means over the tablets that reported, to stand in for the others.
	var sizeSum, loadSum float64
	var sized, loaded, count int
	for i := range in.Tablets {
		t := &in.Tablets[i]
		if _, ok := live[t.Server]; !ok {
			continue
		}
		count++
		if t.HasSize {
			sizeSum += float64(t.SizeBytes)
			sized++
		}
		if t.HasLoad {
			loadSum += t.Load
			loaded++
		}
	}
	avgSize, avgLoad := 0.0, 0.0
	if sized > 0 {
		avgSize = sizeSum / float64(sized)
	}
	if loaded > 0 {
		avgLoad = loadSum / float64(loaded)
	}
	totalSize := sizeSum + avgSize*float64(count-sized)
	totalLoad := loadSum + avgLoad*float64(count-loaded)
	meanCount := math.Max(float64(count)/float64(n), 1)
	meanSize := math.Max(totalSize/float64(n), float64(cfg.SizeFloor))
	meanLoad := math.Max(totalLoad/float64(n), cfg.LoadFloor)

	costs := make([]float64, n)
	cands := make([][]planCand, n)
	for i := range in.Tablets {
		t := &in.Tablets[i]
		s, ok := live[t.Server]
		if !ok {
			continue
		}
		size, load := avgSize, avgLoad
		if t.HasSize {
			size = float64(t.SizeBytes)
		}
		if t.HasLoad {
			load = t.Load
		}
		w := cfg.CountWeight/meanCount + cfg.SizeWeight*size/meanSize + cfg.LoadWeight*load/meanLoad
		costs[s] += w
		if t.Fixed != "" {
			continue
		}
		if len(in.Recent) > 0 {
			if last, ok := in.Recent[tabletKey(t.Table, t.ID)]; ok && in.Now.Sub(last.At) < cfg.Cooldown {
				continue
			}
		}
		cands[s] = append(cands[s], planCand{t: t, w: w})
	}
	for _, cs := range cands {
		slices.SortFunc(cs, func(a, b planCand) int {
			if c := cmp.Compare(a.w, b.w); c != 0 {
				return c // the common case: no string compares
			}
			return cmp.Or(cmp.Compare(a.t.Table, b.t.Table), cmp.Compare(a.t.ID, b.t.ID))
		})
	}
	var total float64
	for _, c := range costs {
		total += c
	}
	plan.MeanCost = total / float64(n)
	margin := cfg.Margin * plan.MeanCost

	// order lists server indexes by cost, ties by id.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sortOrder := func() {
		slices.SortFunc(order, func(a, b int) int { return cmp.Or(cmp.Compare(costs[a], costs[b]), cmp.Compare(a, b)) })
	}
	spread := func() float64 { return costs[order[n-1]] - costs[order[0]] }
	sortOrder()
	for len(plan.Moves) < cfg.MaxMoves {
		src, dst, ci := -1, -1, -1
	search:
		for i := n - 1; i > 0; i-- {
			a := order[i]
			if costs[a] <= plan.MeanCost*(1+1e-9) {
				// Only servers above the mean give: when the costliest
				// servers' tablets are cooling down, an empty server is
				// not fed by draining the others below the mean (the
				// costliest server is always above it, so this never
				// stops convergence).
				break
			}
			for j := 0; j < i; j++ {
				b := order[j]
				gap := costs[a] - costs[b]
				if gap-margin <= 0 {
					break // later targets cost more: no gap is wider
				}
				if k := pickTablet(cands[a], gap, margin, ids[b], in.Recent, in.Now, cfg.NoReturn); k >= 0 {
					src, dst, ci = a, b, k
					break search
				}
			}
		}
		if src < 0 {
			break
		}
		c := cands[src][ci]
		cands[src] = slices.Delete(cands[src], ci, ci+1)
		m := Move{
			Table: c.t.Table, ID: c.t.ID, From: ids[src], To: ids[dst], Weight: c.w,
			FromBefore: costs[src], ToBefore: costs[dst], SpreadBefore: spread(),
		}
		costs[src] -= c.w
		costs[dst] += c.w
		sortOrder()
		m.FromAfter, m.ToAfter, m.SpreadAfter = costs[src], costs[dst], spread()
		m.Reason = fmt.Sprintf("cost of %s %.3f exceeds %s's %.3f by more than the tablet's %.3f plus the margin %.3f",
			m.From, m.FromBefore, m.To, m.ToBefore, m.Weight, margin)
		plan.Moves = append(plan.Moves, m)
	}
	for i, id := range ids {
		plan.Costs[id] = costs[i]
	}
	plan.Spread = spread()
	return plan
}

// pickTablet returns the index in cs (sorted by weight) of the tablet whose
// weight is closest to gap/2 among those with w < gap - margin that may go
// to server to, or -1.
func pickTablet(cs []planCand, gap, margin float64, to string, recent map[string]LastMove, now time.Time, noReturn time.Duration) int {
	limit := gap - margin
	ok := func(k int) bool {
		c := cs[k]
		if c.w >= limit {
			return false
		}
		if len(recent) == 0 {
			return true
		}
		if last, seen := recent[tabletKey(c.t.Table, c.t.ID)]; seen && last.From == to && now.Sub(last.At) < noReturn {
			return false
		}
		return true
	}
	half := gap / 2
	hi := sort.Search(len(cs), func(k int) bool { return cs[k].w >= half })
	lo := hi - 1
	// Walk outwards from gap/2; w(gap - w) is symmetric around it.
	for {
		if hi < len(cs) && cs[hi].w >= limit {
			hi = len(cs) // everything above is too heavy
		}
		if lo < 0 && hi >= len(cs) {
			return -1
		}
		useHi := hi < len(cs) && (lo < 0 || cs[hi].w-half <= half-cs[lo].w)
		if useHi {
			if ok(hi) {
				return hi
			}
			hi++
			continue
		}
		if ok(lo) {
			return lo
		}
		lo--
	}
}
