package tablet

import (
	"context"
	"errors"
	"sync"
)

// An operator's major compaction rewrites every file of every family, so a
// background compaction running when it is asked for only delays it: the
// major compaction would wait for it (compactions of a tablet run one at a
// time) and then read its output again. Compact(major) cancels the running
// background compaction (its partial output is removed) and holds new ones
// off until the major compaction is done; the next background round picks
// up whatever is left to do. Without this, the time from "compact now" to
// "one file per family" included whatever merge of old runs happened to be
// in flight, which grows faster than the data.

// errPreempted is the cause of a background compaction's cancellation by a
// major compaction. It never reaches a caller.
var errPreempted = errors.New("tablet: background compaction preempted by a major compaction")

// preemption tracks the running background compaction and the major
// compactions asked for.
type preemption struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc // the running background compaction's; nil if none
	majors int                     // major compactions begun and not ended
}

// startBackground returns the context one background compaction runs
// with and the function to call when it is done; ok is false while a major
// compaction is pending (the background compaction should not start).
func (p *preemption) startBackground(ctx context.Context) (_ context.Context, done func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.majors > 0 {
		return nil, nil, false
	}
	cctx, cancel := context.WithCancelCause(ctx)
	p.cancel = cancel
	return cctx, func() {
		p.mu.Lock()
		p.cancel = nil
		p.mu.Unlock()
		cancel(nil)
	}, true
}

// beginMajor cancels the running background compaction, if any, and holds
// new ones off until end is called.
func (p *preemption) beginMajor() (end func() (last bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.majors++
	if p.cancel != nil {
		p.cancel(errPreempted)
	}
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.majors--
		return p.majors == 0
	}
}

// preempted reports whether a background compaction's context was
// cancelled by a major compaction (rather than by the tablet's close).
func preempted(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errPreempted)
}
