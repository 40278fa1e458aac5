package master

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// auditInterval is how often the leader asks every tablet server which
// tablets it serves.
const auditInterval = 10 * time.Second

// The audit. A confirmed load says a server served a tablet once; it may
// have stopped since without the master asking: its commit log failed, an
// assignment watch dropped it, or someone called UnloadTablet directly.
// Such a tablet would stay down, assigned and "loaded", until its server
// died. Every auditInterval the leader asks each server that is serving
// under the lease it registered which tablets it holds; a confirmed tablet
// missing there is loaded again (the server refuses an epoch it unloaded,
// so after a few refusals the tablet is taken back with a confirmed unload
// and given out at a new epoch).
//
// A split or merge parent whose commit's outcome stayed unknown is one such
// tablet: its server dropped it and refuses its epoch, because the commit
// may still land on its key (tabletserver dropUnsettled). A reload at the
// same epoch goes through no etcd transaction and would fence nothing,
// which is why it is refused. The tablet is then taken back and given out
// at a new epoch by meta.Assign, whose transaction is guarded by the
// parent key's ModRevision, the very guard of the split's (or merge's)
// transaction: once the reassignment commits, the late commit can never
// land; if the commit lands first, the reassignment conflicts and the next
// pass finds the children instead (their folders were kept).
// TestAuditedParentOfAnUnsettledSplitIsReassignedUnderTheSplitsGuard.

// Where the audit learns what a server holds. While the leader collects
// load reports, from the latest round: every round asks every server, and
// a delta report applied to what the leader holds is the server's whole
// set, with epochs. Asking again here would cost a second full answer of
// every tablet per interval (at 100,000 tablets a 17 MB answer every
// 10 s) and, as a caller between two load rounds, turn the next delta
// report into a full one. The audit then runs once per new round. Without
// load collection (LoadInterval < 0), or when the last round is stale
// (rounds failing), it asks the servers itself, as before.
//
// An audit passes over every tablet of the index (at 100,000 tablets tens
// of milliseconds and a copy of each record). When its inputs are those
// of the last audit, which found every confirmed tablet held, it finds
// the same and is skipped: the round's tablets (the report's generation),
// the servers and leases it counts, the index's revision and the loads
// confirmed (assigner.loadGen).

// auditKey is what an audit from a load round depends on.
type auditKey struct {
	report  uint64
	servers string // "id/lease " of each server whose answer counts, sorted
	rev     int64
	loadGen int64
}

// holds says whether a server serves table/id at epoch.
type holds func(table, id string, epoch int64) bool

// heldFromLoads answers, from the latest load round if it is fresh and
// newer than after, what each server that answered it serving under its
// registered lease holds, and when the round asked. stale says the round
// is too old to use at all (ask the servers).
func (a *assigner) heldFromLoads(snap *snapshot, after time.Time) (held map[string]holds, at time.Time, key auditKey, stale bool) {
	m := a.m
	rep := m.Loads()
	if m.opts.LoadInterval <= 0 || rep == nil || time.Since(rep.At) >= loadFreshness*m.opts.LoadInterval {
		return nil, time.Time{}, auditKey{}, true
	}
	if !rep.At.After(after) {
		return nil, time.Time{}, auditKey{}, false // no new round since the last audit
	}
	// Read before the index is walked: a change after this moves the key.
	key = auditKey{report: rep.gen, rev: m.index.Rev(), loadGen: a.loadGen.Load()}
	var servers []string
	held = map[string]holds{}
	for id, sl := range rep.Servers {
		srv, ok := snap.servers[id]
		if !ok || !sl.serving || sl.lease != srv.Lease {
			continue
		}
		tablets := sl.tablets
		held[id] = func(table, tid string, epoch int64) bool {
			t, ok := tablets[tabletKey(table, tid)]
			return ok && t.Epoch == epoch
		}
		servers = append(servers, fmt.Sprintf("%s/%d ", id, sl.lease))
	}
	sort.Strings(servers)
	key.servers = strings.Join(servers, "")
	return held, rep.At, key, false
}

// auditOnce compares every live server's held tablets with the confirmed
// loads of this term and forgets the confirmations the servers contradict.
func (a *assigner) auditOnce(ctx context.Context) {
	// The servers as the loop knows them and the tablets from the index:
	// an audit reads nothing of the map from etcd. A record newer than a
	// server's answer only makes a tablet look held or not for one round.
	snap := a.view()
	held, at, key, stale := a.heldFromLoads(snap, a.lastAudit)
	switch {
	case held != nil:
		snap.at = at
		if a.cleanAudit == key {
			a.lastAudit = at
			a.auditsSkipped.Add(1)
			return
		}
	case !stale:
		return
	default:
		snap.at = time.Now()
		held = a.askHeld(ctx, snap)
	}
	a.lastAudit = snap.at
	a.cleanAudit = auditKey{}
	if lost := a.auditAgainst(snap, held); lost == 0 && key != (auditKey{}) {
		a.cleanAudit = key
	}
	a.auditsRun.Add(1)
}

// askHeld asks every server in snap, in parallel, which tablets it holds.
func (a *assigner) askHeld(ctx context.Context, snap *snapshot) map[string]holds {
	type heldKey struct {
		key   string
		epoch int64
	}
	var mu sync.Mutex
	held := map[string]holds{} // server id → tablets it serves
	var wg sync.WaitGroup
	for id, srv := range snap.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp *tabulapb.ServerStatsResponse
			err := a.m.callServer(ctx, srv.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
				var err error
				resp, err = c.ServerStats(ctx, &tabulapb.ServerStatsRequest{})
				return err
			})
			// Only a server serving under the lease it registered with
			// speaks for its tablets; a paused one may resume them.
			if err != nil || !resp.GetServing() || resp.GetLease() != srv.Lease {
				return
			}
			set := map[heldKey]bool{}
			for _, ts := range resp.GetTablets() {
				r := ts.GetTablet()
				set[heldKey{tabletKey(r.GetTable(), r.GetTabletId()), r.GetEpoch()}] = true
			}
			mu.Lock()
			held[id] = func(table, tid string, epoch int64) bool { return set[heldKey{tabletKey(table, tid), epoch}] }
			mu.Unlock()
		}()
	}
	wg.Wait()
	return held
}

// auditAgainst forgets the confirmations, made before snap.at, of tablets
// their servers in held do not hold, and answers how many.
func (a *assigner) auditAgainst(snap *snapshot, held map[string]holds) int {
	n := 0
	var tablets []meta.VersionedTablet
	a.m.index.each(func(t *meta.VersionedTablet, _ *tabulapb.TableSchema) {
		if _, asked := held[t.Server]; asked {
			tablets = append(tablets, *t)
		}
	})
	for _, t := range tablets {
		has, asked := held[t.Server]
		srv, owned := snap.owned(&t.TabletRecord)
		if !asked || !owned || srv.ID != t.Server {
			continue
		}
		key := a.m.layout.TabletKey(t.Table, t.ID)
		a.mu.Lock()
		st := a.loads[key]
		// Only loads confirmed before the snapshot: a load confirmed
		// after the server answered would look missing.
		lost := st != nil && st.confirmed && !st.inflight && st.epoch == t.Epoch && st.confirmedAt.Before(snap.at) && !has(t.Table, t.ID, t.Epoch)
		if lost {
			st.confirmed = false
			a.loadGen.Add(1)
		}
		a.mu.Unlock()
		if lost {
			a.audited.Add(1)
			a.m.log.Warn("tablet assigned and loaded is not served by its server; loading it again", "tablet", key, "server", t.Server, "epoch", t.Epoch)
			a.touch(tabletRef{t.Table, t.ID})
			n++
		}
	}
	return n
}
