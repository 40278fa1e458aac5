package master

import (
	"time"

	"github.com/tabuladb/tabula/meta"
)

// repairAssignments makes sure every assigned tablet is mirrored under its
// server's assignments/ prefix, which tablet servers read and watch in
// place of the whole map (meta.RepairAssignments, docs/CONTRACTS.md §4):
// in a cluster upgraded in place the leader of the first term fills the
// mirrors in and marks the cluster ready; after that the call reads one
// key. It is retried (1 s, doubling to 30 s) while it fails, until the
// term ends.
func (m *Master) repairAssignments(term *leadership) {
	for delay := time.Second; ; delay = min(2*delay, 30*time.Second) {
		n, err := meta.RepairAssignments(term.ctx, m.cli, m.layout, 0, term.guard())
		if err == nil {
			if n > 0 {
				m.log.Info("mirrored the assignments of an upgraded cluster", "event", "layout", "tablets", n)
			}
			return
		}
		if term.ctx.Err() != nil {
			return
		}
		m.log.Warn("mirroring the assignments", "err", err)
		select {
		case <-term.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
