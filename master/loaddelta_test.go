package master

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestCollectLoadAppliesDeltaReports: the leader acknowledges each report,
// keeps the tablets a delta report leaves out, takes the changed ones,
// drops the removed ones, keeps the very same tablet map when nothing
// changed, and asks for a full report when a delta does not add up.
func TestCollectLoadAppliesDeltaReports(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	tablets := c.tablets("t")
	a, b := tablets[0].ID, tablets[1].ID

	// The script: what the server answers to the next request (nil: the
	// full report the fake builds), and the requests seen.
	var mu sync.Mutex
	var next func(full *tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse
	var reqs []*tabulapb.ServerStatsRequest
	seq := uint64(0)
	s1.statsHook = func(req *tabulapb.ServerStatsRequest, resp *tabulapb.ServerStatsResponse) {
		mu.Lock()
		defer mu.Unlock()
		reqs = append(reqs, req)
		seq++
		if next != nil {
			*resp = *next(resp)
		}
		resp.ReportSeq, resp.Incarnation, resp.Serving = seq, 7, true
	}
	script := func(fn func(full *tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse) {
		mu.Lock()
		defer mu.Unlock()
		next = fn
	}
	lastReq := func() *tabulapb.ServerStatsRequest {
		mu.Lock()
		defer mu.Unlock()
		return reqs[len(reqs)-1]
	}
	ref := func(id string) *tabulapb.TabletRef { return &tabulapb.TabletRef{Table: "t", TabletId: id, Epoch: 1} }
	collect := func() *LoadReport {
		t.Helper()
		rep, err := m.collectLoad(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	s1.setStats(a, &tabulapb.TabletStats{SizeBytes: 1000, ReadsPerSec: 5})
	s1.setStats(b, &tabulapb.TabletStats{SizeBytes: 3000})
	full := collect()
	if r := lastReq(); !r.Delta || r.AckSeq != 0 {
		t.Fatalf("first request: delta %v ack %d", r.Delta, r.AckSeq)
	}
	if len(full.Tablets) != 2 || full.Servers["s1"].SizeBytes != 4000 {
		t.Fatalf("full report: %d tablets, s1 %+v", len(full.Tablets), full.Servers["s1"])
	}

	// A delta: a changed, b left out.
	script(func(*tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse {
		return &tabulapb.ServerStatsResponse{ServerId: "s1", Delta: true, TabletCount: 2,
			Tablets: []*tabulapb.TabletStats{{Tablet: ref(a), SizeBytes: 2000, ReadsPerSec: 50}}}
	})
	d := collect()
	if r := lastReq(); r.AckSeq != 1 || r.AckIncarnation != 7 {
		t.Fatalf("second request acknowledges %d/%d, want 1/7", r.AckSeq, r.AckIncarnation)
	}
	la, _ := d.Tablet("t", a)
	lb, _ := d.Tablet("t", b)
	if la == nil || la.SizeBytes != 2000 || la.ReadsPerSec != 50 || lb == nil || lb.SizeBytes != 3000 {
		t.Fatalf("after a delta: a %+v, b %+v", la, lb)
	}
	if s := d.Servers["s1"]; s.Tablets != 2 || s.SizeBytes != 5000 || s.ReadsPerSec != 50 {
		t.Fatalf("after a delta, s1 sums %+v", s)
	}
	if d.gen == full.gen {
		t.Fatal("the report changed and its generation did not move")
	}

	// An empty delta: the same tablet map, the same generation.
	script(func(*tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse {
		return &tabulapb.ServerStatsResponse{ServerId: "s1", Delta: true, TabletCount: 2}
	})
	idle := collect()
	if r := lastReq(); r.AckSeq != 2 {
		t.Fatalf("third request acknowledges %d, want 2", r.AckSeq)
	}
	if len(idle.Tablets) != 2 || idle.gen != d.gen || idle.Servers["s1"].SizeBytes != 5000 {
		t.Fatalf("after an empty delta: %d tablets, gen %d -> %d, s1 %+v", len(idle.Tablets), d.gen, idle.gen, idle.Servers["s1"])
	}
	if !idle.SameTablets(d) || d.SameTablets(full) || (&LoadReport{}).SameTablets(&LoadReport{}) {
		t.Fatal("SameTablets: want true for an idle round after the round it repeats only")
	}

	// b removed.
	script(func(*tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse {
		return &tabulapb.ServerStatsResponse{ServerId: "s1", Delta: true, TabletCount: 1, Removed: []*tabulapb.TabletRef{ref(b)}}
	})
	gone := collect()
	if _, ok := gone.Tablet("t", b); ok || len(gone.Tablets) != 1 || gone.Servers["s1"].Tablets != 1 {
		t.Fatalf("after removing b: %d tablets, s1 %+v", len(gone.Tablets), gone.Servers["s1"])
	}
	if _, ok := idle.Tablet("t", b); !ok {
		t.Fatal("a later round modified an earlier report")
	}

	// A delta whose count does not add up: applied, not acknowledged.
	script(func(*tabulapb.ServerStatsResponse) *tabulapb.ServerStatsResponse {
		return &tabulapb.ServerStatsResponse{ServerId: "s1", Delta: true, TabletCount: 5}
	})
	collect()
	script(nil)
	again := collect()
	if r := lastReq(); r.AckSeq != 0 {
		t.Fatalf("after a delta that did not add up the request acknowledged %d, want 0 (a full report)", r.AckSeq)
	}
	if len(again.Tablets) != 2 {
		t.Fatalf("full report after: %d tablets", len(again.Tablets))
	}
}

// TestAuditReadsTheLoadRound: while the leader collects load reports, the
// audit finds a tablet its server dropped from the latest round and asks
// the server nothing itself (a full answer of every tablet, and a caller
// that would turn the next delta report into a full one).
func TestAuditReadsTheLoadRound(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: time.Hour}) // rounds run by the test only
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	tab := waitAllLoaded(t, c, "t", 1, s1)[0]
	var full atomic.Int64 // ServerStats calls not asking for a delta: the audit's own
	s1.statsHook = func(req *tabulapb.ServerStatsRequest, _ *tabulapb.ServerStatsResponse) {
		if !req.GetDelta() {
			full.Add(1)
		}
	}
	s1.mu.Lock()
	delete(s1.held, tab.ID) // dropped without the master asking
	loadsBefore := len(s1.loads)
	s1.mu.Unlock()
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	auditNow(m)
	waitFor(t, 20*time.Second, func() (bool, string) {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		_, ok := s1.held[tab.ID]
		return ok && len(s1.loads) > loadsBefore, fmt.Sprintf("held %v", s1.held)
	})
	if n := full.Load(); n != 0 {
		t.Fatalf("the audit asked the server itself %d times while load reports were fresh", n)
	}
}

// TestAuditSkipsUnchangedRounds: an audit whose inputs (the load round's
// tablets, the servers, the index, the confirmed loads) are those of the
// last audit, which found nothing, is skipped; a round in which a server
// no longer holds a tablet is audited and the tablet loaded again.
func TestAuditSkipsUnchangedRounds(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: time.Hour})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	tab := waitAllLoaded(t, c, "t", 2, s1)[0]
	waitConfirmed(t, c, m, "t")
	term, err := m.lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := term.assign
	audit := func() {
		t.Helper()
		ran, skipped := a.auditsRun.Load(), a.auditsSkipped.Load()
		if _, err := m.collectLoad(ctx); err != nil {
			t.Fatal(err)
		}
		auditNow(m)
		waitFor(t, 10*time.Second, func() (bool, string) {
			return a.auditsRun.Load()+a.auditsSkipped.Load() > ran+skipped, "the audit did not finish"
		})
	}
	audit()
	if a.auditsRun.Load() == 0 {
		t.Fatal("the first audit of a round was skipped")
	}
	audit() // the same report again
	if a.auditsSkipped.Load() != 1 {
		t.Fatalf("an audit of an unchanged round was not skipped (%d skipped)", a.auditsSkipped.Load())
	}
	s1.mu.Lock()
	delete(s1.held, tab.ID) // dropped without the master asking
	loadsBefore := len(s1.loads)
	s1.mu.Unlock()
	audit()
	waitFor(t, 20*time.Second, func() (bool, string) {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		_, ok := s1.held[tab.ID]
		return ok && len(s1.loads) > loadsBefore, fmt.Sprintf("held %v", s1.held)
	})
}
