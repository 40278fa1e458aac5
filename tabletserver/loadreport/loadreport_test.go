package loadreport

import (
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestDeltaReportThresholds: a small drift waits for the refresh, adds up
// until it crosses the threshold, and a change of the tablet itself is
// sent at once.
func TestDeltaReportThresholds(t *testing.T) {
	var r Reporter
	stats := func(size int64, rps float64, epoch int64) []*tabulapb.TabletStats {
		return []*tabulapb.TabletStats{{Tablet: &tabulapb.TabletRef{Table: "t", TabletId: "a", Epoch: epoch}, SizeBytes: size, ReadsPerSec: rps}}
	}
	var prev *tabulapb.ServerStatsResponse
	report := func(cur []*tabulapb.TabletStats) int {
		req := &tabulapb.ServerStatsRequest{Delta: true}
		if prev != nil {
			req.AckSeq, req.AckIncarnation = prev.ReportSeq, prev.Incarnation
		}
		resp := &tabulapb.ServerStatsResponse{}
		r.Fill(req, resp, cur)
		prev = resp
		return len(resp.Tablets)
	}
	const mib = 1 << 20
	if n := report(stats(100*mib, 10, 1)); n != 1 {
		t.Fatalf("full report: %d tablets", n)
	}
	// +5 % size and rate: below 10 % of the larger value; then +12 % of
	// what was sent, in two steps of which neither alone is 10 %.
	if n := report(stats(105*mib, 10.5, 1)); n != 0 {
		t.Fatal("a 5 % drift was sent at once")
	}
	if n := report(stats(112*mib, 11.2, 1)); n != 1 {
		t.Fatal("a drift adding up to 12 % of the sent value was not sent")
	}
	// A tiny change is sent by the refresh, RefreshReports reports
	// after the tablet was last sent, not before.
	for i := 1; i < RefreshReports; i++ {
		if n := report(stats(112*mib+1, 11.2, 1)); n != 0 {
			t.Fatalf("a 1-byte change was sent %d reports after the last send", i)
		}
	}
	if n := report(stats(112*mib+1, 11.2, 1)); n != 1 {
		t.Fatalf("a 1-byte change was not refreshed after %d reports", RefreshReports)
	}
	// Unchanged: never sent again.
	for range 2 * RefreshReports {
		if n := report(stats(112*mib+1, 11.2, 1)); n != 0 {
			t.Fatal("an unchanged tablet was sent")
		}
	}
	if n := report(stats(112*mib+1, 11.2, 2)); n != 1 {
		t.Fatal("a new epoch was not sent at once")
	}
	// Near zero the floor holds: 0 -> 0.1 req/s waits, 0 -> 1 req/s goes.
	if n := report(stats(int64(110.25*mib)+1, 0, 2)); n != 1 {
		t.Fatal("11 -> 0 req/s was not sent")
	}
	if n := report(stats(int64(110.25*mib)+1, 0.1, 2)); n != 0 {
		t.Fatal("0 -> 0.1 req/s was sent at once")
	}
	if n := report(stats(int64(110.25*mib)+1, 1, 2)); n != 1 {
		t.Fatal("0 -> 1 req/s was not sent")
	}
}
