package master

import (
	"context"
	"time"
)

// Idle balancing rounds. A round at 100,000 tablets costs about 0.3 s of
// CPU (a copy of the tablet index, the planner's input, the plan;
// docs/BENCHMARKS.md "Balancer and load reports"), 2 % of a core every
// 15 s, even when nothing in the cluster has moved since the last round,
// which planned nothing. A plan depends on the tablet map and the
// servers (both in etcd: the index's revision once synced moves with any
// write), the latest load report (its generation moves only when a
// tablet's numbers or the servers reporting changed), whether that report
// is fresh, which tablets the assignment loop has confirmed loaded, and
// the memory of recent moves. When none of them changed since a round
// that planned no move, and no move younger than the no-return time is
// remembered (an older one no longer changes a plan), the loop skips the
// round; it still runs one every balanceIdleMaxSkips rounds.

// balanceIdleMaxSkips bounds the rounds skipped in a row (5 minutes at
// the default interval of 15 s).
const balanceIdleMaxSkips = 20

// balanceKey is what a round's plan depends on, besides the clock.
type balanceKey struct {
	rev     int64
	report  uint64
	fresh   bool
	loadGen int64
}

// balanceKeyNow reads the key; ok is false when the index is not synced.
func (m *Master) balanceKeyNow(ctx context.Context, term *leadership, now time.Time) (balanceKey, bool) {
	if !m.index.sync(ctx) {
		return balanceKey{}, false
	}
	k := balanceKey{rev: m.index.Rev(), loadGen: term.assign.loadGen.Load()}
	if rep := m.Loads(); rep != nil {
		k.report = rep.gen
		k.fresh = m.opts.LoadInterval > 0 && now.Sub(rep.At) < loadFreshness*m.opts.LoadInterval
	}
	return k, true
}

// skipIdle reports whether the loop may skip this round at now: the key
// is that of the last round, which planned nothing, and no move younger
// than noReturn is remembered.
func (b *balancerState) skipIdle(k balanceKey, ok bool, now time.Time, noReturn time.Duration) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	young := false
	for _, lm := range b.recent {
		young = young || now.Sub(lm.At) <= noReturn
	}
	if !ok || !b.idleValid || b.idleKey != k || young || b.skippedInRow >= balanceIdleMaxSkips {
		b.skippedInRow = 0
		return false
	}
	b.skippedInRow++
	b.skipped++
	return true
}

// noteRound remembers k as idle when the round planned and made nothing.
func (b *balancerState) noteRound(k balanceKey, ok bool, planned, moved int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.idleKey, b.idleValid = k, ok && planned == 0 && moved == 0
}
