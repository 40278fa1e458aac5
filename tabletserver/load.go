package tabletserver

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/tabletserver/load"
)

// Every tablet held here has a load.Meter; the data calls record into it
// and loadLoop closes every meter's window at once, so that the rates of
// all tablets in one ServerStats answer cover the same window. The master
// pulls them (docs/OPERATIONS.md "Balancing, splits and merges").

// maxKeyQuantiles bounds ServerStatsRequest.key_quantiles: the keys are
// for drawing a heatmap, not for shipping the sample.
const maxKeyQuantiles = 16

// loadLoop rolls the load windows every LoadWindow until ctx is done.
func (s *Server) loadLoop(ctx context.Context) {
	ticker := time.NewTicker(s.opts.LoadWindow)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			s.rollLoad(now)
		}
	}
}

// rollLoad closes the load window of every tablet held at now. Tests call
// it directly (with the loop disabled) to drive windows.
func (s *Server) rollLoad(now time.Time) {
	for _, h := range s.heldTablets("") {
		h.load.Roll(now)
	}
	s.loadRolled.Store(now.UnixMicro())
}

// record counts one data call on h that began at start.
func record(h *held, k load.Kind, row []byte, n int, start time.Time) {
	// h.load is a value: a held tablet built anywhere meters its load.
	h.load.Record(k, row, n, time.Since(start))
}

// mutationBytes approximates the bytes a write carries: the names and
// values it sets.
func mutationBytes(ms []*tabulapb.Mutation) int {
	n := 0
	for _, m := range ms {
		if c := m.GetSetCell(); c != nil {
			n += len(c.GetFamily()) + len(c.GetQualifier()) + len(c.GetValue())
			continue
		}
		if c := m.GetAddToCell(); c != nil {
			n += len(c.GetFamily()) + len(c.GetQualifier()) + 8
			continue
		}
		if c := m.GetMergeToCell(); c != nil {
			n += len(c.GetFamily()) + len(c.GetQualifier()) + 8
			continue
		}
		n += 8 // a delete: its names are small
	}
	return n
}

// addLoad fills the load fields of ts from h's last closed window and
// totals, with up to quantiles access keys.
func addLoad(ts *tabulapb.TabletStats, h *held, quantiles int) {
	w := h.load.Last()
	ts.ReadsPerSec = w.ReadsPerSec()
	ts.WritesPerSec = w.WritesPerSec()
	ts.ReadBytesPerSec = w.ReadBytesPerSec()
	ts.WriteBytesPerSec = w.WriteBytesPerSec()
	ts.BusyShare = w.BusyShare()
	ts.LoadWindowMicros = w.End.Sub(w.Start).Microseconds()
	if quantiles > 0 {
		ts.AccessQuantiles = w.Quantiles(min(quantiles, maxKeyQuantiles))
	}
	tot := h.load.Totals()
	ts.ReadsTotal, ts.WritesTotal = tot.Reads, tot.Writes
	ts.ReadBytesTotal, ts.WriteBytesTotal = tot.ReadBytes, tot.WriteBytes
}
