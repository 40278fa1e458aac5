package master

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/meta"
)

// Load reporting (docs/OPERATIONS.md "Load reports"): the leader pulls
// every live tablet server's ServerStats once per LoadInterval and keeps
// the latest answers in memory. Pulling, not pushing through etcd, because
// load is soft state that changes every window: writing it to etcd would
// cost a Raft round and a revision per server per window and grow etcd's
// history for nothing a restart could not rebuild in one interval; a pull
// by the one process that uses it costs one RPC per server per interval,
// which the leader paces itself, and nothing when no master leads.

// TabletLoad is one tablet's last reported size and load.
type TabletLoad struct {
	Table, ID               string
	Server                  string // the id of the server that reported it
	Epoch                   int64  // the epoch it serves the tablet at
	Start, End              []byte
	SizeBytes               int64
	MemtableBytes           int64
	FamilyBytes             map[string]int64
	SSTables                int32
	CompactionBacklog       int64
	ReadsPerSec             float64
	WritesPerSec            float64
	ReadBytesPerSec         float64
	WriteBytesPerSec        float64
	BusyShare               float64  // seconds serving per second
	AccessQuantiles         [][]byte // keys cutting the sampled accesses into equal parts
	ReadsTotal, WritesTotal int64    // since loaded on its server
}

// RequestsPerSec counts reads and writes.
func (t *TabletLoad) RequestsPerSec() float64 { return t.ReadsPerSec + t.WritesPerSec }

// ServerLoad sums a server's tablets.
type ServerLoad struct {
	ID, Address  string
	Tablets      int
	SizeBytes    int64
	ReadsPerSec  float64
	WritesPerSec float64
	BusyShare    float64
	SSTables     int
	// Err says why the server did not answer this round (its tablets are
	// then missing from the report).
	Err string
	// Events are the server's events logged since the previous round
	// (flushes, compactions, splits...), oldest first.
	Events []eventlog.Event

	// What the audit reads (audit.go): the lease the server answered
	// under, and its tablets (never modified) when it answered serving.
	lease   int64
	serving bool
	tablets map[string]*TabletLoad
}

// LoadReport is one collection round.
type LoadReport struct {
	At      time.Time
	Servers map[string]*ServerLoad // by server id
	Tablets map[string]*TabletLoad // by table + "/" + tablet id
	// gen moves when the servers or tablets reported differ from the
	// previous round's (the balancer skips rounds when it has not moved);
	// 1 for a master's first round.
	gen uint64
}

// Tablet returns the load of table/id in the report, if reported.
func (r *LoadReport) Tablet(table, id string) (*TabletLoad, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.Tablets[tabletKey(table, id)]
	return t, ok
}

func tabletKey(table, id string) string { return table + "/" + id }

// SameTablets reports whether r and o, two rounds of one master, hold the
// very same tablets (an idle round hands on the previous round's map):
// a reader may reuse what it derived from o. False for reports not made
// by a collection round, unless they are one report.
func (r *LoadReport) SameTablets(o *LoadReport) bool {
	return r != nil && o != nil && (r == o || r.gen != 0 && r.gen == o.gen)
}

// loads holds the latest report and who wants each new one.
type loads struct {
	mu       sync.Mutex
	latest   *LoadReport
	watchers []func(*LoadReport)
	// eventsSince is, per server, the time of the last event received:
	// each round asks only for newer ones.
	eventsSince map[string]time.Time
	// round serialises collection rounds; the fields below are the
	// collector's own.
	round sync.Mutex
	// held is, per server, what its reports said so far (the base of its
	// next delta report).
	held map[string]*serverReport
	// contrib lists the servers whose tablets the latest report holds.
	contrib []string
}

// serverReport is the leader's copy of one server's reports: the report
// to acknowledge in the next request, the tablets reported, their sums.
type serverReport struct {
	incarnation, seq uint64
	tablets          map[string]*TabletLoad // by tabletKey; the values are never modified
	sums             ServerLoad
}

// Loads returns the latest load report of this master (nil when it has
// not led through a collection round).
func (m *Master) Loads() *LoadReport {
	m.load.mu.Lock()
	defer m.load.mu.Unlock()
	return m.load.latest
}

// OnLoadReport calls fn with every new report, on the collector's
// goroutine: fn must return quickly and must not modify the report, which
// Loads hands to other readers too.
func (m *Master) OnLoadReport(fn func(*LoadReport)) {
	m.load.mu.Lock()
	defer m.load.mu.Unlock()
	m.load.watchers = append(m.load.watchers, fn)
}

// loadRound collects a report (every LoadInterval while the term lasts).
func (m *Master) loadRound(ctx context.Context) {
	if _, err := m.collectLoad(ctx); err != nil && ctx.Err() == nil {
		m.log.Debug("collecting load reports", "err", err)
	}
}

// collectLoadParallelism bounds the ServerStats calls in flight.
const collectLoadParallelism = 16

// maxServerStatsBytes bounds one ServerStats answer. A report costs about
// 350 bytes per tablet (docs/BENCHMARKS.md), so gRPC's default 4 MiB
// limit failed every report of a server with more than ~12,000 tablets;
// 256 MiB holds ~750,000.
const maxServerStatsBytes = 256 << 20

// collectLoad runs one collection round: ServerStats of every registered
// server, at most collectLoadParallelism at once, each asked for a delta
// report against the last one it answered (a server answers a full one
// when it cannot: tabletserver/loadreport.go). A server that does not
// answer is listed with its error and without tablets. Tests call it
// directly.
func (m *Master) collectLoad(ctx context.Context) (*LoadReport, error) {
	m.load.round.Lock()
	defer m.load.round.Unlock()
	servers, err := meta.GetServers(ctx, m.cli, m.layout)
	if err != nil {
		return nil, err
	}
	rep := &LoadReport{At: time.Now(), Servers: map[string]*ServerLoad{}}
	answers := make([]*tabulapb.ServerStatsResponse, len(servers))
	errs := make([]error, len(servers))
	m.load.mu.Lock()
	since, prev := m.load.eventsSince, m.load.latest
	m.load.mu.Unlock()
	held := m.load.held
	nextSince := map[string]time.Time{} // only the servers registered now
	sem := make(chan struct{}, collectLoadParallelism)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		sem <- struct{}{}
		req := &tabulapb.ServerStatsRequest{KeyQuantiles: loadKeyQuantiles, Delta: true}
		if h := held[s.ID]; h != nil {
			req.AckSeq, req.AckIncarnation = h.seq, h.incarnation
		}
		if t, ok := since[s.ID]; ok {
			req.EventsSinceMicros = t.UnixMicro() + 1
		}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = m.callServer(ctx, s.Address, func(ctx context.Context, c tabulapb.TabletServerClient) error {
				var err error
				answers[i], err = c.ServerStats(ctx, req, grpc.MaxCallRecvMsgSize(maxServerStatsBytes))
				return err
			})
		}()
	}
	wg.Wait()
	nextHeld := make(map[string]*serverReport, len(servers))
	var contrib []string
	changed := prev == nil
	for i, s := range servers {
		sl := &ServerLoad{ID: s.ID, Address: s.Address}
		rep.Servers[s.ID] = sl
		if t, ok := since[s.ID]; ok {
			nextSince[s.ID] = t
		}
		if errs[i] != nil {
			sl.Err = errs[i].Error()
			if h := held[s.ID]; h != nil {
				nextHeld[s.ID] = h
			}
			continue
		}
		sl.Events = eventsOf(answers[i].GetEvents())
		if n := len(sl.Events); n > 0 {
			nextSince[s.ID] = sl.Events[n-1].Time
		}
		h, moved := m.applyReport(held[s.ID], s.ID, answers[i])
		nextHeld[s.ID] = h
		changed = changed || moved
		if !answers[i].GetServing() {
			sl.Err = "not serving (lease not known to be held)"
			continue
		}
		contrib = append(contrib, s.ID)
		sl.lease, sl.serving, sl.tablets = answers[i].GetLease(), true, h.tablets
		sl.Tablets, sl.SizeBytes, sl.ReadsPerSec, sl.WritesPerSec = h.sums.Tablets, h.sums.SizeBytes, h.sums.ReadsPerSec, h.sums.WritesPerSec
		sl.BusyShare, sl.SSTables = h.sums.BusyShare, h.sums.SSTables
	}
	if changed || !slices.Equal(contrib, m.load.contrib) {
		// Rebuilt only when something moved: an idle round costs no pass
		// over the tablets (docs/BENCHMARKS.md "The master at 100,000
		// tablets, real processes").
		n := 0
		for _, id := range contrib {
			n += len(nextHeld[id].tablets)
		}
		rep.Tablets = make(map[string]*TabletLoad, n)
		for _, id := range contrib {
			maps.Copy(rep.Tablets, nextHeld[id].tablets)
		}
		rep.gen = 1 // 0: a report not made by collectLoad (SameTablets)
		if prev != nil {
			rep.gen = prev.gen + 1
		}
	} else {
		rep.Tablets, rep.gen = prev.Tablets, prev.gen // never modified: shared
	}
	m.load.held, m.load.contrib = nextHeld, contrib
	m.load.mu.Lock()
	m.load.latest = rep
	m.load.eventsSince = nextSince
	watchers := m.load.watchers
	m.load.mu.Unlock()
	for _, fn := range watchers {
		fn(rep)
	}
	return rep, ctx.Err()
}

// applyReport folds server id's answer into h (nil: nothing held yet) and
// answers what to hold now and whether its tablets changed. A delta
// report is applied to a copy of the tablet map, which earlier reports
// share (at 10,000 tablets per server the copy costs about a millisecond,
// and only a round that changed something makes it); one that does
// not match what is held (another incarnation, a tablet count that does
// not add up) is applied as far as it goes and not acknowledged, so the
// next answer is a full report.
func (m *Master) applyReport(h *serverReport, id string, a *tabulapb.ServerStatsResponse) (*serverReport, bool) {
	if !a.GetServing() {
		// No tablets, no report number: start again from a full report.
		return &serverReport{tablets: map[string]*TabletLoad{}}, h != nil && len(h.tablets) > 0
	}
	if !a.GetDelta() {
		return fullReport(h, id, a)
	}
	if h == nil || h.incarnation != a.GetIncarnation() {
		// A delta against a base this master does not hold: unusable (the
		// server answers deltas only to the acknowledgement of its last
		// report, so this is a bug somewhere); ask again.
		m.log.Warn("load report: a delta report without its base; asking for a full one", "server", id)
		return &serverReport{tablets: map[string]*TabletLoad{}}, true
	}
	h.incarnation, h.seq = a.GetIncarnation(), a.GetReportSeq()
	if len(a.GetTablets()) > 0 || len(a.GetRemoved()) > 0 {
		h.tablets = maps.Clone(h.tablets)
	}
	for _, ts := range a.GetTablets() {
		tl := tabletLoadOf(id, ts)
		h.tablets[tabletKey(tl.Table, tl.ID)] = tl
	}
	for _, r := range a.GetRemoved() {
		delete(h.tablets, tabletKey(r.GetTable(), r.GetTabletId()))
	}
	moved := len(a.GetTablets()) > 0 || len(a.GetRemoved()) > 0
	if len(h.tablets) != int(a.GetTabletCount()) {
		m.log.Warn("load report: tablets held and reported differ; asking for a full report", "server", id,
			"held", len(h.tablets), "reported", a.GetTabletCount())
		h.seq = 0
	}
	if moved {
		h.sumUp()
	}
	return h, moved
}

// fullReport is what to hold after a full report: its tablets, or, when
// they equal those of h in every field (a server that does not send
// deltas, an idle cluster), h's map, so that the round counts as
// unchanged.
func fullReport(h *serverReport, id string, a *tabulapb.ServerStatsResponse) (*serverReport, bool) {
	out := &serverReport{incarnation: a.GetIncarnation(), seq: a.GetReportSeq(), tablets: make(map[string]*TabletLoad, len(a.GetTablets()))}
	same := h != nil && len(h.tablets) == len(a.GetTablets())
	for _, ts := range a.GetTablets() {
		tl := tabletLoadOf(id, ts)
		k := tabletKey(tl.Table, tl.ID)
		out.tablets[k] = tl
		if same {
			o := h.tablets[k]
			same = o != nil && sameLoad(o, tl)
		}
	}
	if same && len(out.tablets) == len(h.tablets) {
		out.tablets, out.sums = h.tablets, h.sums
		return out, false
	}
	out.sumUp()
	return out, true
}

// sameLoad reports whether a and b say the same in every field.
func sameLoad(a, b *TabletLoad) bool {
	return a.Table == b.Table && a.ID == b.ID && a.Server == b.Server && a.Epoch == b.Epoch &&
		bytes.Equal(a.Start, b.Start) && bytes.Equal(a.End, b.End) &&
		a.SizeBytes == b.SizeBytes && a.MemtableBytes == b.MemtableBytes && maps.Equal(a.FamilyBytes, b.FamilyBytes) &&
		a.SSTables == b.SSTables && a.CompactionBacklog == b.CompactionBacklog &&
		a.ReadsPerSec == b.ReadsPerSec && a.WritesPerSec == b.WritesPerSec &&
		a.ReadBytesPerSec == b.ReadBytesPerSec && a.WriteBytesPerSec == b.WriteBytesPerSec && a.BusyShare == b.BusyShare &&
		slices.EqualFunc(a.AccessQuantiles, b.AccessQuantiles, bytes.Equal) &&
		a.ReadsTotal == b.ReadsTotal && a.WritesTotal == b.WritesTotal
}

// sumUp sets h.sums from h.tablets.
func (h *serverReport) sumUp() {
	h.sums = ServerLoad{}
	for _, tl := range h.tablets {
		h.sums.Tablets++
		h.sums.SizeBytes += tl.SizeBytes
		h.sums.ReadsPerSec += tl.ReadsPerSec
		h.sums.WritesPerSec += tl.WritesPerSec
		h.sums.BusyShare += tl.BusyShare
		h.sums.SSTables += int(tl.SSTables)
	}
}

// loadKeyQuantiles is how many access keys per tablet a report carries:
// enough for the heatmap to show where inside a tablet the load is.
const loadKeyQuantiles = 8

func tabletLoadOf(server string, ts *tabulapb.TabletStats) *TabletLoad {
	return &TabletLoad{
		Table: ts.GetTablet().GetTable(), ID: ts.GetTablet().GetTabletId(), Server: server, Epoch: ts.GetTablet().GetEpoch(),
		Start: ts.GetStartKey(), End: ts.GetEndKey(),
		SizeBytes: ts.GetSizeBytes(), MemtableBytes: ts.GetMemtableBytes(), FamilyBytes: ts.GetFamilyBytes(),
		SSTables: ts.GetSstables(), CompactionBacklog: ts.GetCompactionBacklog(),
		ReadsPerSec: ts.GetReadsPerSec(), WritesPerSec: ts.GetWritesPerSec(),
		ReadBytesPerSec: ts.GetReadBytesPerSec(), WriteBytesPerSec: ts.GetWriteBytesPerSec(),
		BusyShare: ts.GetBusyShare(), AccessQuantiles: ts.GetAccessQuantiles(),
		ReadsTotal: ts.GetReadsTotal(), WritesTotal: ts.GetWritesTotal(),
	}
}

func eventsOf(ps []*tabulapb.ServerEvent) []eventlog.Event {
	out := make([]eventlog.Event, len(ps))
	for i, p := range ps {
		e := eventlog.Event{Time: time.UnixMicro(p.GetTimeMicros()), Kind: p.GetKind(), Table: p.GetTable(), Tablet: p.GetTablet(), Message: p.GetMessage()}
		for _, k := range slices.Sorted(maps.Keys(p.GetAttrs())) {
			e.Attrs = append(e.Attrs, eventlog.Attr{Key: k, Value: p.GetAttrs()[k]})
		}
		out[i] = e
	}
	return out
}
