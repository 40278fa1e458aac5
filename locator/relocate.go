package locator

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Relocate asks a master where the tablet holding row is now, bypassing
// the cached location stale: the tablet the caller sent a call for row to
// and is still waiting on. A client uses it when a server has been silent
// for a while, to learn whether the tablet moved (to another server, to a
// newer epoch, or into split children) while it waited, much as
// CockroachDB's DistSender probes a stalled replica before abandoning the
// requests stuck on it. The answer replaces stale in the cache.
//
// It costs at most one lookup per tablet and RelocateInterval, however
// many callers wait on that tablet: when the cache already holds another
// location for row (a caller learnt it), that is the answer; concurrent
// Relocates of the same stale tablet share one lookup; and an answer is
// reused for Options.RelocateInterval.
//
// It makes one round over the masters and does not wait for an unassigned
// tablet to be assigned: such an answer comes back with an error wrapping
// ErrUnassigned (the tablet has left stale's server either way). Other
// errors are gRPC status errors or context errors.
func (l *Locator) Relocate(ctx context.Context, stale Tablet, row []byte) (Tablet, error) {
	if !stale.Contains(row) {
		return Tablet{}, status.Errorf(codes.InvalidArgument, "locator: relocate row %q outside tablet %s [%q, %q)", row, stale.ID, stale.Start, stale.End)
	}
	table := stale.Table
	if t, ok := l.cache.lookup(table, row); ok && !t.sameLocation(stale) {
		return t, nil
	}
	key := table + "\x00" + stale.ID + "\x00" + strconv.FormatInt(stale.Epoch, 10)
	if r, ok := l.recent.get(key, l.now(), l.opts.RelocateInterval); ok && r.tablet.Contains(row) {
		return r.tablet, r.err
	}
	ts, err := l.flight.do(ctx, "x\x00"+key, func(ctx context.Context) ([]Tablet, error) {
		var t Tablet
		err := l.CallMaster(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
			var err error
			t, err = l.lookupRow(ctx, m, table, row)
			return err
		})
		if err == nil || errors.Is(err, ErrUnassigned) {
			l.recent.put(key, relocation{tablet: t, err: err, at: l.now()}, l.opts.RelocateInterval)
		}
		return []Tablet{t}, err
	})
	if (err != nil && !errors.Is(err, ErrUnassigned)) || len(ts) == 0 {
		return Tablet{}, err
	}
	if !ts[0].Contains(row) {
		// Another caller's row led the shared lookup to the other child of
		// a split.
		return l.Locate(ctx, table, row)
	}
	return ts[0], err
}

// relocations remembers recent Relocate answers, per stale tablet.
type relocations struct {
	// mu protects byKey.
	mu    sync.Mutex
	byKey map[string]relocation
}

type relocation struct {
	tablet Tablet
	err    error // nil or wrapping ErrUnassigned
	at     time.Time
}

// get returns the answer stored under key if it is younger than ttl.
func (r *relocations) get(key string, now time.Time, ttl time.Duration) (relocation, bool) {
	if ttl < 0 {
		return relocation{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	x, ok := r.byKey[key]
	if !ok || now.Sub(x.at) >= ttl {
		return relocation{}, false
	}
	return x, true
}

// put stores x under key and drops the answers older than ttl.
func (r *relocations) put(key string, x relocation, ttl time.Duration) {
	if ttl < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = make(map[string]relocation)
	}
	for k, old := range r.byKey {
		if x.at.Sub(old.at) >= ttl {
			delete(r.byKey, k)
		}
	}
	r.byKey[key] = x
}
