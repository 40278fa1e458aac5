package tablet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// defaultMaxStall bounds how long a writer waits above the soft limit.
const defaultMaxStall = time.Second

// MemoryBudget tracks the memtable memory of every tablet of a server. Above
// the soft limit writers trigger a flush of the largest tablet and wait
// (bounded) for the total to come down; above the hard limit they fail at
// once with ErrResourceExhausted. Safe for concurrent use.
type MemoryBudget struct {
	soft, hard int64
	maxStall   time.Duration
	used       atomic.Int64
	// throttled and rejected count admissions above the soft limit (the
	// writer waited) and above the hard limit (the writer failed), for
	// the server's metrics.
	throttled, rejected atomic.Uint64

	// mu protects the fields below.
	mu      sync.Mutex
	tablets map[*Tablet]struct{}
	changed chan struct{} // closed and replaced whenever used goes down
}

// NewMemoryBudget returns a budget with the given soft and hard limits in
// bytes; 0 means the default (soft 256 MiB, hard 512 MiB). A hard limit below
// the soft one is raised to it.
func NewMemoryBudget(soft, hard int64) *MemoryBudget {
	if soft <= 0 {
		soft = 256 << 20
	}
	if hard <= 0 {
		hard = 512 << 20
	}
	if hard < soft {
		hard = soft
	}
	return &MemoryBudget{soft: soft, hard: hard, maxStall: defaultMaxStall,
		tablets: map[*Tablet]struct{}{}, changed: make(chan struct{})}
}

// SetMaxStall sets how long a writer above the soft limit waits for flushes
// before going ahead anyway. The default is 1s.
func (b *MemoryBudget) SetMaxStall(d time.Duration) {
	b.mu.Lock()
	b.maxStall = d
	b.mu.Unlock()
}

// Used returns the memtable bytes currently charged to the budget.
func (b *MemoryBudget) Used() int64 { return b.used.Load() }

// Limits returns the soft and hard limits in bytes.
func (b *MemoryBudget) Limits() (soft, hard int64) { return b.soft, b.hard }

// Throttled returns how many writes had to wait because memtable memory
// was above the soft limit.
func (b *MemoryBudget) Throttled() uint64 { return b.throttled.Load() }

// Rejected returns how many writes failed with ErrResourceExhausted
// because memtable memory was above the hard limit.
func (b *MemoryBudget) Rejected() uint64 { return b.rejected.Load() }

func (b *MemoryBudget) register(t *Tablet) {
	b.mu.Lock()
	b.tablets[t] = struct{}{}
	b.mu.Unlock()
}

func (b *MemoryBudget) unregister(t *Tablet) {
	b.mu.Lock()
	delete(b.tablets, t)
	b.mu.Unlock()
}

func (b *MemoryBudget) charge(n int64) { b.used.Add(n) }

func (b *MemoryBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	b.mu.Lock()
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// flushLargest asks the tablet with the most memtable bytes to flush.
func (b *MemoryBudget) flushLargest() {
	b.mu.Lock()
	var best *Tablet
	var most int64 = -1
	for t := range b.tablets {
		if n := t.memBytes(); n > most {
			best, most = t, n
		}
	}
	b.mu.Unlock()
	if best != nil && most > 0 {
		best.requestFlush()
	}
}

// admit throttles a writer: nil when it may go ahead.
func (b *MemoryBudget) admit(ctx context.Context) error {
	used := b.used.Load()
	if used > b.hard {
		b.rejected.Add(1)
		return fmt.Errorf("%w: memtable memory %d bytes is over the hard limit %d bytes; retry later", ErrResourceExhausted, used, b.hard)
	}
	if used <= b.soft {
		return nil
	}
	b.throttled.Add(1)
	b.flushLargest()
	b.mu.Lock()
	stall := b.maxStall
	b.mu.Unlock()
	timer := time.NewTimer(stall)
	defer timer.Stop()
	for b.used.Load() > b.soft {
		b.mu.Lock()
		ch := b.changed
		b.mu.Unlock()
		if b.used.Load() <= b.soft {
			break
		}
		select {
		case <-ch:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Limiter bounds how many compactions run at once across tablets. Safe for
// concurrent use.
type Limiter struct{ slots chan struct{} }

// NewLimiter returns a limiter of n concurrent holders; n < 1 means 1.
func NewLimiter(n int) *Limiter {
	if n < 1 {
		n = 1
	}
	return &Limiter{slots: make(chan struct{}, n)}
}

// acquire takes a slot, waiting until one is free or ctx is done.
func (l *Limiter) acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Limiter) release() { <-l.slots }
