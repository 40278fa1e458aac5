package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tabuladb/tabula/tabletserver/load"
)

// Load-based splits (docs/OPERATIONS.md "Load-based splits"): a tablet
// whose request rate stays at or above HotSplitRPS for HotSplitWindows
// consecutive load windows splits at the row that halves the load its
// sampled keys show, so that the balancer can move one half away; a size
// split would cut at the middle of the bytes, which can leave all the
// load on one side.
//
// Hotness is noted when a window closes (rollLoad) and acted on by the
// split check (checkSplits), so a split, which flushes and talks to etcd,
// never delays the closing of other tablets' windows. Cooldowns run on
// the windows' clock (their end times), the clock rollLoad is given, so
// that tests drive them with chosen times as they drive the windows.

// hotRowShare is the share of the sampled load on one row past which a
// load split is not attempted: a row is never split, so the side that
// gets it keeps more than this share whatever the cut.
const hotRowShare = 0.6

// hotState is a tablet's load-split state.
type hotState struct {
	mu sync.Mutex
	// windows are the consecutive hot windows closed last, oldest first,
	// at most HotSplitWindows of them; a window under the threshold
	// empties it, so only hot tablets keep their samples.
	windows []load.Window
	// quietUntil: no load split before this window time. Set on the
	// children of a load split and after a hot row was found.
	quietUntil time.Time
}

// note adds a closed window: kept if hot, else the run of hot windows
// ends.
func (hs *hotState) note(w load.Window, threshold float64, keep int) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if threshold <= 0 || w.RequestsPerSec() < threshold {
		hs.windows = nil
		return
	}
	hs.windows = append(hs.windows, w)
	if n := len(hs.windows); n > keep {
		hs.windows = append([]load.Window(nil), hs.windows[n-keep:]...)
	}
}

// due returns the hot windows when there are keep of them and the
// cooldown is over at the last one's end.
func (hs *hotState) due(keep int) []load.Window {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.windows) < keep {
		return nil
	}
	if hs.windows[len(hs.windows)-1].End.Before(hs.quietUntil) {
		return nil
	}
	return slices.Clone(hs.windows)
}

// quiet holds off load splits until t and drops the hot windows.
func (hs *hotState) quiet(t time.Time) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.quietUntil, hs.windows = t, nil
}

// noteLoad records h's window w, just closed, for the load-split check.
func (s *Server) noteLoad(h *held, w load.Window) {
	h.hot.note(w, s.opts.HotSplitRPS, s.opts.HotSplitWindows)
}

// checkLoadSplit splits h by load if it has been hot long enough. It
// reports whether it split.
func (s *Server) checkLoadSplit(ctx context.Context, h *held) bool {
	ws := h.hot.due(s.opts.HotSplitWindows)
	if ws == nil {
		return false
	}
	now := ws[len(ws)-1].End
	var rps float64
	for _, w := range ws {
		rps += w.RequestsPerSec()
	}
	rps /= float64(len(ws))
	start, end := h.t.Range()
	cut := load.Halve(ws, start, end)
	if cut.Top == nil {
		return false // no sampled row in the range: nothing says where
	}
	if cut.Key == nil || cut.TopShare > hotRowShare {
		// Logged once: the cooldown drops the windows, and the next
		// attempt needs HotSplitWindows new ones after it.
		h.hot.quiet(now.Add(s.opts.HotSplitCooldown))
		s.logger.Info("hot row", "event", "hot-row", "table", h.table, "tablet", h.id, "row", logKey(cut.Top),
			"share", round2(cut.TopShare), "rps", round2(rps), "retry_after", s.opts.HotSplitCooldown)
		return false
	}
	_, err := s.splitAs(ctx, h, cut.Key, splitWhy{
		reason:        "load",
		childrenQuiet: now.Add(s.opts.HotSplitCooldown),
		attrs:         []any{"rps", round2(rps), "left_share", round2(cut.Left), "right_share", round2(1 - cut.Left)},
	})
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			s.logger.Warn("load split", "table", h.table, "tablet", h.id, "row", logKey(cut.Key), "err", err)
		}
		return false
	}
	return true
}

// maxLogKey bounds the bytes of a row key in a log line.
const maxLogKey = 64

// logKey renders a row key for a log line: Go escapes for bytes that are
// not printable (without the quotes, which the log handler adds when
// needed), cut to maxLogKey bytes with an ellipsis and the full length.
func logKey(k []byte) string {
	cut := k
	if len(k) > maxLogKey {
		cut = k[:maxLogKey]
	}
	q := strconv.Quote(string(cut))
	q = q[1 : len(q)-1]
	if len(cut) < len(k) {
		q += fmt.Sprintf("…(%d bytes)", len(k))
	}
	return q
}

// round2 keeps two decimals: enough for a log line.
func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
