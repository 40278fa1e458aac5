package master

import "context"

// Idle rounds of the automatic merge. A round observes every tablet (at
// 100,000 tablets a copy of the index and two maps as large, every
// minute). What it concludes depends on the tablet map and the servers
// (the index's revision once synced moves with any etcd write), the load
// report's numbers (its generation), and the clock, but the clock only
// for pairs that are small and cold enough and wait for their window or
// cooldown. When the last round found no such pair and none eligible, and
// neither the revision nor the report changed since, the next round would
// find none either and changes none of the remembered state (a tablet's
// quiet run goes on or stays absent as it was), so it is skipped; one in
// mergeIdleMaxSkips runs anyway. Only with the default load source: a
// MergeOptions.Load of a test is not covered by the report's generation.

// mergeIdleMaxSkips bounds the rounds skipped in a row (20 minutes at the
// default interval).
const mergeIdleMaxSkips = 20

// mergeKey is what a round depends on besides the clock.
type mergeKey struct {
	rev    int64
	report uint64
	loaded bool // a report exists
}

// mergeKeyNow reads the key; ok is false when a skip is not possible.
func (m *Master) mergeKeyNow(ctx context.Context) (mergeKey, bool) {
	if m.opts.Merge.Load != nil || !m.index.sync(ctx) {
		return mergeKey{}, false
	}
	k := mergeKey{rev: m.index.Rev()}
	if rep := m.Loads(); rep != nil {
		k.report, k.loaded = rep.gen, true
	}
	return k, true
}

// skipIdle reports whether this round may be skipped.
func (w *mergeWatch) skipIdle(k mergeKey, ok bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ok || !w.idleValid || w.idleKey != k || w.skippedInRow >= mergeIdleMaxSkips {
		w.skippedInRow = 0
		return false
	}
	w.skippedInRow++
	w.skipped++
	return true
}

// noteRound remembers k when the round found nothing time could change.
func (w *mergeWatch) noteRound(k mergeKey, idle bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.idleKey, w.idleValid = k, idle
}
