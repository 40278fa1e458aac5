package master

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// The automatic merge (docs/OPERATIONS.md "Merges"): a loop of the leader
// that merges two adjacent tablets of a table when, for a sustained
// window, both stayed small and cold: their combined size below a
// fraction of the table's split threshold, their combined request rate
// below a floor. It never merges across a user split key, never a tablet
// this master first saw less than SplitCooldown ago (a fresh split child,
// so a range is not split and merged back and forth), and at most
// MaxPerRound pairs per Interval. What it knows lives in the leader's
// memory and is rebuilt after a failover by watching again: a new leader
// waits a whole window before its first merge, which errs on the side of
// merging late.

// MergeOptions configure the automatic merge. The zero value of every
// field means its default.
type MergeOptions struct {
	// Disabled turns the automatic merge off for the whole cluster (a
	// table turns it off for itself with TableSchema.auto_merge_disabled).
	Disabled bool
	// Interval is how often the leader looks for pairs to merge. The
	// default is 1 minute.
	Interval time.Duration
	// SizeFraction: a pair merges only while its combined size is below
	// this fraction of the table's split threshold, so the merged tablet
	// is far from splitting again. The default is 0.25.
	SizeFraction float64
	// MaxRequestsPerSec: a pair merges only while its combined reads and
	// writes per second stay below this. The default is 1.
	MaxRequestsPerSec float64
	// Window is how long both tablets must have stayed small and cold,
	// in every load report, before they merge. The default is 10 minutes.
	Window time.Duration
	// SplitCooldown: a tablet this master first saw less than this long
	// ago (a split child, or any tablet after a failover) is not merged.
	// The default is 30 minutes.
	SplitCooldown time.Duration
	// Cooldown is how long after a merge MergedRecently reports the
	// merged tablet, for the load-based split to leave it alone. The
	// default is 30 minutes.
	Cooldown time.Duration
	// MaxPerRound bounds the merges of one round. The default is 1.
	MaxPerRound int
	// Load returns a tablet's size and request rate from the latest load
	// report, known=false if it has none. The default reads Master.Loads;
	// tests set a fake.
	Load func(table, id string) (size int64, reqPerSec float64, known bool)
	// Now is the clock. The default is time.Now.
	Now func() time.Time
}

func (o *MergeOptions) fill() {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.SizeFraction <= 0 {
		o.SizeFraction = 0.25
	}
	if o.MaxRequestsPerSec <= 0 {
		o.MaxRequestsPerSec = 1
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Minute
	}
	if o.SplitCooldown <= 0 {
		o.SplitCooldown = 30 * time.Minute
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 30 * time.Minute
	}
	if o.MaxPerRound <= 0 {
		o.MaxPerRound = 1
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// mergeWatch is what the leader remembers between rounds.
type mergeWatch struct {
	mu sync.Mutex
	// firstSeen is when each tablet (table/id) was first in a round.
	firstSeen map[string]time.Time
	// quietSince is when each tablet's current run of small and cold
	// reports began; absent while it is not small and cold.
	quietSince map[string]time.Time
	// mergedAt is when this master merged each tablet it created.
	mergedAt map[string]time.Time

	// The idle check (automerge_idle.go): the key of the last round if it
	// found no pair that only time keeps from merging, the rounds skipped
	// in a row and in all.
	idleKey      mergeKey
	idleValid    bool
	skippedInRow int
	skipped      int64
}

func newMergeWatch() *mergeWatch {
	return &mergeWatch{firstSeen: map[string]time.Time{}, quietSince: map[string]time.Time{}, mergedAt: map[string]time.Time{}}
}

// MergedRecently reports whether table/id was merged (by this master, or
// is a merged tablet this master first saw) less than
// MergeOptions.Cooldown ago: the load-based split leaves such a tablet
// alone, so a range is not merged and split back and forth.
func (m *Master) MergedRecently(table, id string) bool {
	w := m.mergeWatch
	now := m.opts.Merge.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.mergedAt[tabletKey(table, id)]
	return ok && now.Sub(at) < m.opts.Merge.Cooldown
}

// mergeLoad is MergeOptions.Load's default: the latest load report.
func (m *Master) mergeLoad(table, id string) (int64, float64, bool) {
	t, ok := m.Loads().Tablet(table, id)
	if !ok {
		return 0, 0, false
	}
	return t.SizeBytes, t.RequestsPerSec(), true
}

// autoMergeTick runs a round (every Merge.Interval while term lasts).
func (m *Master) autoMergeTick(ctx context.Context, term *leadership) {
	if n, err := m.autoMergeRound(ctx, term); err != nil && ctx.Err() == nil {
		m.log.Warn("automatic merge", "merged", n, "err", err)
	}
}

// mergeCandidate is a pair of adjacent tablets the policy chose.
type mergeCandidate struct {
	left, right meta.VersionedTablet
}

// autoMergeRound observes every tablet once and merges up to MaxPerRound
// eligible pairs; it returns how many it merged. Tests call it directly.
func (m *Master) autoMergeRound(ctx context.Context, term *leadership) (int, error) {
	k, ok := m.mergeKeyNow(ctx)
	if m.mergeWatch.skipIdle(k, ok) {
		return 0, nil
	}
	snap, err := m.mergeSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	pairs, pending := m.observeForMerge(snap)
	m.mergeWatch.noteRound(k, ok && pending == 0 && len(pairs) == 0)
	merged := 0
	for _, p := range pairs {
		if merged >= m.opts.Merge.MaxPerRound || ctx.Err() != nil {
			break
		}
		begin := m.opts.Merge.Now()
		rec, err := m.mergePair(ctx, term, p.left.Table, p.left.ID, p.right.ID)
		if errors.Is(err, errPairGone) {
			continue // split or merged since the snapshot: the next round sees it
		}
		if err != nil {
			return merged, err
		}
		merged++
		w := m.mergeWatch
		w.mu.Lock()
		now := m.opts.Merge.Now()
		w.mergedAt[tabletKey(rec.Table, rec.ID)] = now
		w.firstSeen[tabletKey(rec.Table, rec.ID)] = now
		w.mu.Unlock()
		m.log.Info("automatic merge", "table", rec.Table, "left", p.left.ID, "right", p.right.ID, "merged", rec.ID,
			"start", string(rec.Start), "end", string(rec.End), "duration", m.opts.Merge.Now().Sub(begin).Round(time.Millisecond))
	}
	return merged, nil
}

// mergeSnapshot is the cluster as the round sees it: tables and tablets
// from the leader's in-memory index (so a round reads only servers/ from
// etcd, not every tablet record), or from etcd while the index is not
// built or cannot catch up. The index is synced first, so a round sees
// every merge and split that completed before it (a stale view would only
// cost a round: the server's merge commit is guarded by both tablets'
// ModRevisions).
func (m *Master) mergeSnapshot(ctx context.Context) (*snapshot, error) {
	if !m.index.sync(ctx) {
		return m.readSnapshot(ctx)
	}
	schemas, ok := m.index.schemaList()
	if !ok {
		return m.readSnapshot(ctx)
	}
	servers, err := meta.GetServers(ctx, m.cli, m.layout)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{servers: map[string]meta.ServerRecord{}, tables: map[string]*tabulapb.TableSchema{}}
	for _, s := range servers {
		snap.servers[s.ID] = s
	}
	slices.SortFunc(schemas, func(a, b *tabulapb.TableSchema) int { return strings.Compare(a.GetName(), b.GetName()) })
	for _, s := range schemas {
		schema, tablets, ok := m.index.table(s.GetName())
		if !ok {
			continue
		}
		snap.tables[s.GetName()] = schema
		for _, t := range tablets {
			snap.tablets = append(snap.tablets, *t)
		}
	}
	return snap, nil
}

// observeForMerge records what the latest load report says of every
// tablet of snap and returns the pairs eligible now, in table and key
// order, and how many more pairs are small and cold enough but have not
// been so long enough (or are too new): only time keeps them apart.
func (m *Master) observeForMerge(snap *snapshot) (out []mergeCandidate, pending int) {
	o := &m.opts.Merge
	now := o.Now()
	load := o.Load
	if load == nil {
		load = m.mergeLoad
	}
	w := m.mergeWatch
	w.mu.Lock()
	defer w.mu.Unlock()
	type state struct {
		size  int64
		rate  float64
		quiet bool
	}
	states := make(map[string]state, len(snap.tablets))
	live := make(map[string]bool, len(snap.tablets))
	for _, t := range snap.tablets {
		key := tabletKey(t.Table, t.ID)
		live[key] = true
		if _, ok := w.firstSeen[key]; !ok {
			w.firstSeen[key] = now
			if len(t.MergedFrom) > 0 {
				w.mergedAt[key] = now // merged before this master led: cool down from now
			}
		}
		schema := snap.tables[t.Table]
		size, rate, known := load(t.Table, t.ID)
		limit := int64(float64(m.splitThresholdOf(schema)) * o.SizeFraction)
		quiet := known && size < limit && rate < o.MaxRequestsPerSec
		if !quiet {
			delete(w.quietSince, key)
		} else if _, ok := w.quietSince[key]; !ok {
			w.quietSince[key] = now
		}
		states[key] = state{size: size, rate: rate, quiet: quiet}
	}
	for _, mp := range []map[string]time.Time{w.firstSeen, w.quietSince, w.mergedAt} {
		for k := range mp {
			if !live[k] {
				delete(mp, k)
			}
		}
	}
	if o.Disabled {
		return nil, 0
	}
	for i := 1; i < len(snap.tablets); i++ {
		l, r := snap.tablets[i-1], snap.tablets[i]
		schema := snap.tables[l.Table]
		if r.Table != l.Table || schema == nil || schema.GetAutoMergeDisabled() || schema.GetState() == meta.TableDeleting {
			continue
		}
		if len(l.End) == 0 || !bytes.Equal(l.End, r.Start) {
			continue
		}
		if _, user := slices.BinarySearchFunc(schema.GetUserSplitKeys(), l.End, bytes.Compare); user {
			continue // a boundary the user asked for
		}
		if _, ok := snap.owned(&l.TabletRecord); !ok || l.State == meta.StateSplitting {
			continue
		}
		if _, ok := snap.owned(&r.TabletRecord); !ok || r.State == meta.StateSplitting {
			continue
		}
		lk, rk := tabletKey(l.Table, l.ID), tabletKey(r.Table, r.ID)
		ls, rs := states[lk], states[rk]
		limit := int64(float64(m.splitThresholdOf(schema)) * o.SizeFraction)
		if !ls.quiet || !rs.quiet || ls.size+rs.size >= limit || ls.rate+rs.rate >= o.MaxRequestsPerSec {
			continue
		}
		if now.Sub(w.quietSince[lk]) < o.Window || now.Sub(w.quietSince[rk]) < o.Window {
			pending++
			continue
		}
		if now.Sub(w.firstSeen[lk]) < o.SplitCooldown || now.Sub(w.firstSeen[rk]) < o.SplitCooldown {
			pending++
			continue
		}
		out = append(out, mergeCandidate{left: l, right: r})
		i++ // pairs of one round are disjoint
	}
	return out, pending
}

// splitThresholdOf is the split threshold of a table's schema.
func (m *Master) splitThresholdOf(s *tabulapb.TableSchema) int64 {
	if t := s.GetSplitThresholdBytes(); t > 0 {
		return t
	}
	return m.opts.DefaultSplitThreshold
}

// SetAutoMerge switches the automatic merge on or off for one table: it
// sets auto_merge_disabled in the table's schema. Merges already running
// finish; the next round honours the switch.
func (m *Master) SetAutoMerge(ctx context.Context, req *tabulapb.SetAutoMergeRequest) (*tabulapb.SetAutoMergeResponse, error) {
	on := req.GetEnabled()
	_, err := m.changeFamilies(ctx, req.GetTable(), func(s *tabulapb.TableSchema) error {
		s.AutoMergeDisabled = !on
		return nil
	})
	if err == nil {
		m.log.Info("automatic merge switched for table", "table", req.GetTable(), "on", on)
	}
	return &tabulapb.SetAutoMergeResponse{}, toStatus(ctx, err)
}
