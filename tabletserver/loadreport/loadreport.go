// Package loadreport is the tablet server's side of delta load reports
// (docs/OPERATIONS.md "Load reports"): which tablets a ServerStats answer
// carries when the caller acknowledges the last report it received. A
// package of its own so that simulated servers in measurements
// (e2e/masteridle_test.go) answer exactly as a real one does.
package loadreport

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"math"
	"sync"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// The leader pulls
// every server's ServerStats every 10 s; a full report of 100,000 tablets
// is 35 MB, and decoding it cost the master 11 % of a core while nothing
// in the cluster moved (docs/BENCHMARKS.md "Balancer and load reports").
// A caller that sets delta and acknowledges the last report it received
// gets only the tablets whose stats moved beyond the thresholds below
// since the values it holds, plus the ids of the tablets gone. The server
// remembers what it last sent per tablet, so a slow drift adds up until it
// crosses a threshold; any difference at all (totals, access keys) is sent
// at the latest after RefreshReports reports, so nothing the master
// shows is staler than that many intervals.
//
// One caller at a time gets deltas: the server keeps one "sent" state, and
// a delta request whose acknowledgement is not the last report answered (a
// new leader, a lost answer, a restarted server, another master asking in
// between) gets a full report, which resets that state. That errs towards
// sending too much, never towards a master holding values the server
// never sent. A request without delta (the server's status page, the
// master's audit when load collection is off) gets every tablet and
// leaves the state alone: it changes nothing the delta caller holds.

const (
	// RefreshReports: a tablet whose stats differ at all from what was
	// last sent is sent again after this many reports.
	RefreshReports = 6
	// deltaRelative is the relative change of a size or a rate that is
	// sent in the next report.
	deltaRelative = 0.10
	// The absolute floors under deltaRelative, so that noise around zero
	// is not a change: a tablet that goes from 0 to 0.05 req/s waits for
	// the refresh, one that goes to 1 req/s (the automatic merge's
	// threshold) does not.
	deltaFloorBytes = 1 << 20 // size, memtable, family bytes, backlog
	deltaFloorRate  = 0.2     // reads/s, writes/s
	deltaFloorBPS   = 4 << 10 // bytes read or written per second
	deltaFloorBusy  = 0.002   // busy share
)

// Reporter is one server's delta report state; the zero value is ready
// (the incarnation is drawn at the first report).
type Reporter struct {
	mu          sync.Mutex
	incarnation uint64
	seq         uint64 // the last report answered; 0 = none
	sent        map[string]sentStats
}

// sentStats is what the caller was last sent of one tablet, and in which
// report.
type sentStats struct {
	ts  *tabulapb.TabletStats
	seq uint64
}

// Fill sets the tablets of resp from cur (every tablet held, sorted) as a
// full or a delta report, answering req, and its report number,
// incarnation and tablet count.
func (r *Reporter) Fill(req *tabulapb.ServerStatsRequest, resp *tabulapb.ServerStatsResponse, cur []*tabulapb.TabletStats) {
	if !req.GetDelta() {
		// Not a delta caller (a status page): everything, and the state
		// the delta caller holds stays as it is.
		resp.Tablets, resp.TabletCount = cur, int32(len(cur))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.incarnation == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		r.incarnation = binary.LittleEndian.Uint64(b[:]) | 1
	}
	r.seq++
	resp.ReportSeq, resp.Incarnation, resp.TabletCount = r.seq, r.incarnation, int32(len(cur))
	delta := r.sent != nil && req.GetAckIncarnation() == r.incarnation && req.GetAckSeq() == r.seq-1
	if !delta {
		resp.Tablets = cur
		r.sent = make(map[string]sentStats, len(cur))
		for _, ts := range cur {
			r.sent[statsKey(ts)] = sentStats{ts: ts, seq: r.seq}
		}
		return
	}
	resp.Delta = true
	seen := make(map[string]struct{}, len(cur))
	for _, ts := range cur {
		k := statsKey(ts)
		seen[k] = struct{}{}
		old, ok := r.sent[k]
		if ok {
			significant, differs := statsChanged(old.ts, ts)
			if !significant && (!differs || r.seq-old.seq < RefreshReports) {
				continue
			}
		}
		resp.Tablets = append(resp.Tablets, ts)
		r.sent[k] = sentStats{ts: ts, seq: r.seq}
	}
	for k, old := range r.sent {
		if _, ok := seen[k]; !ok {
			resp.Removed = append(resp.Removed, old.ts.GetTablet())
			delete(r.sent, k)
		}
	}
}

func statsKey(ts *tabulapb.TabletStats) string {
	return ts.GetTablet().GetTable() + "/" + ts.GetTablet().GetTabletId()
}

// statsChanged compares two reports of one tablet: significant when the
// tablet itself changed (epoch, range, SSTables, families) or a size or a
// rate moved beyond its threshold; differs when anything at all differs.
func statsChanged(a, b *tabulapb.TabletStats) (significant, differs bool) {
	if a.GetTablet().GetEpoch() != b.GetTablet().GetEpoch() ||
		!bytes.Equal(a.GetStartKey(), b.GetStartKey()) || !bytes.Equal(a.GetEndKey(), b.GetEndKey()) ||
		a.GetSstables() != b.GetSstables() ||
		len(a.GetFamilyBytes()) != len(b.GetFamilyBytes()) {
		return true, true
	}
	for f, n := range a.GetFamilyBytes() {
		m, ok := b.GetFamilyBytes()[f]
		if !ok || moved(float64(n), float64(m), deltaFloorBytes) {
			return true, true
		}
	}
	if moved(float64(a.GetSizeBytes()), float64(b.GetSizeBytes()), deltaFloorBytes) ||
		moved(float64(a.GetMemtableBytes()), float64(b.GetMemtableBytes()), deltaFloorBytes) ||
		moved(float64(a.GetCompactionBacklog()), float64(b.GetCompactionBacklog()), deltaFloorBytes) ||
		moved(a.GetReadsPerSec(), b.GetReadsPerSec(), deltaFloorRate) ||
		moved(a.GetWritesPerSec(), b.GetWritesPerSec(), deltaFloorRate) ||
		moved(a.GetReadBytesPerSec(), b.GetReadBytesPerSec(), deltaFloorBPS) ||
		moved(a.GetWriteBytesPerSec(), b.GetWriteBytesPerSec(), deltaFloorBPS) ||
		moved(a.GetBusyShare(), b.GetBusyShare(), deltaFloorBusy) {
		return true, true
	}
	differs = a.GetSizeBytes() != b.GetSizeBytes() || a.GetMemtableBytes() != b.GetMemtableBytes() ||
		a.GetCompactionBacklog() != b.GetCompactionBacklog() || a.GetCells() != b.GetCells() ||
		a.GetTombstones() != b.GetTombstones() ||
		a.GetReadsPerSec() != b.GetReadsPerSec() || a.GetWritesPerSec() != b.GetWritesPerSec() ||
		a.GetReadBytesPerSec() != b.GetReadBytesPerSec() || a.GetWriteBytesPerSec() != b.GetWriteBytesPerSec() ||
		a.GetBusyShare() != b.GetBusyShare() || a.GetLoadWindowMicros() != b.GetLoadWindowMicros() ||
		a.GetReadsTotal() != b.GetReadsTotal() || a.GetWritesTotal() != b.GetWritesTotal() ||
		a.GetReadBytesTotal() != b.GetReadBytesTotal() || a.GetWriteBytesTotal() != b.GetWriteBytesTotal() ||
		len(a.GetAccessQuantiles()) != len(b.GetAccessQuantiles())
	if !differs {
		for f, n := range a.GetFamilyBytes() {
			if b.GetFamilyBytes()[f] != n {
				return false, true
			}
		}
		for i, q := range a.GetAccessQuantiles() {
			if !bytes.Equal(q, b.GetAccessQuantiles()[i]) {
				return false, true
			}
		}
	}
	return false, differs
}

// moved reports whether a and b differ by more than deltaRelative of the
// larger and more than floor.
func moved(a, b, floor float64) bool {
	d := math.Abs(a - b)
	return d > floor && d > deltaRelative*math.Max(math.Abs(a), math.Abs(b))
}
