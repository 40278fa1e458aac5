package verify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
)

// IngestOptions configure an ingest run. The zero value is a sensible
// run that lasts until it is stopped.
type IngestOptions struct {
	// Duration ends the run; 0 runs until the context ends or Stop. The
	// default is 0.
	Duration time.Duration
	// ListWriters write linked lists. The default is 8.
	ListWriters int
	// CounterWriters increment counters. The default is 4.
	CounterWriters int
	// Counters is how many counter rows each generation has. The default
	// is 2.
	Counters int
	// ChainWriters move chains with check-and-mutate. The default is 3.
	ChainWriters int
	// Chains is how many chain rows each generation has. The default is 1.
	Chains int
	// Generation is how long the writers use one set of counter and chain
	// rows before moving to fresh ones. Short generations keep each row's
	// history small, which keeps the linearizability check fast. The
	// default is 15s.
	Generation time.Duration
	// MaxUnknown also ends a generation of counter rows: when that many
	// increments on them had an unknown outcome. The default is 4.
	MaxUnknown int
	// ValueSize is the size of a list node's payload. The default is 100.
	ValueSize int
	// OpTimeout bounds one operation, the client's retries included. The
	// default is 30s.
	OpTimeout time.Duration
	// Seed seeds the writers' choices. The default (0) is the clock.
	Seed uint64
}

func (o IngestOptions) withDefaults() IngestOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ListWriters, 8)
	def(&o.CounterWriters, 4)
	def(&o.Counters, 2)
	def(&o.ChainWriters, 3)
	def(&o.Chains, 1)
	def(&o.ValueSize, 100)
	def(&o.MaxUnknown, 4)
	if o.Generation <= 0 {
		o.Generation = 15 * time.Second
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 30 * time.Second
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	return o
}

// Counts are the outcomes of one kind of operation.
type Counts struct {
	Acked, Failed, Unknown int64
}

// Total is the number of operations counted.
func (c Counts) Total() int64 { return c.Acked + c.Failed + c.Unknown }

func (c Counts) String() string {
	return fmt.Sprintf("%d acked, %d failed, %d unknown", c.Acked, c.Failed, c.Unknown)
}

// IngestStats count what an ingest run did.
type IngestStats struct {
	List, Incr, CAS, Read Counts
	// NoMatch counts the Failed CASes whose predicate did not match.
	NoMatch int64
}

// counters are IngestStats under way.
type counters struct {
	byKind  map[Kind]*[3]atomic.Int64 // acked, failed, unknown
	noMatch atomic.Int64
}

func newCounters() *counters {
	c := &counters{byKind: map[Kind]*[3]atomic.Int64{}}
	for _, k := range []Kind{KindList, KindIncr, KindCAS, KindRead} {
		c.byKind[k] = new([3]atomic.Int64)
	}
	return c
}

func (c *counters) add(k Kind, o Outcome) {
	switch o {
	case Acked:
		c.byKind[k][0].Add(1)
	case Failed:
		c.byKind[k][1].Add(1)
	default:
		c.byKind[k][2].Add(1)
	}
}

func (c *counters) get(k Kind) Counts {
	a := c.byKind[k]
	return Counts{Acked: a[0].Load(), Failed: a[1].Load(), Unknown: a[2].Load()}
}

// Ingest is an ingest run under way: writers of linked lists, counters
// and chains, each recording every operation to a history.
type Ingest struct {
	tbl *client.Table
	h   *HistoryWriter
	o   IngestOptions

	counterRows, chainRows *rowSet

	cancel context.CancelFunc
	wg     sync.WaitGroup
	stats  *counters
	// lastAck and lastProgress hold, per worker, the history time of its
	// last acknowledged write and of its last definite answer.
	lastAck      []atomic.Int64
	lastProgress []atomic.Int64

	// mu protects the field below.
	mu    sync.Mutex
	fatal error
}

// StartIngest starts the writers against tbl, recording to h. Stop or the
// end of ctx or of o.Duration ends them; Wait waits for them.
func StartIngest(ctx context.Context, tbl *client.Table, h *HistoryWriter, o IngestOptions) *Ingest {
	o = o.withDefaults()
	cancelTimeout := func() {}
	if o.Duration > 0 {
		ctx, cancelTimeout = context.WithTimeout(ctx, o.Duration)
	}
	ctx, cancel := context.WithCancel(ctx)
	n := o.ListWriters + o.CounterWriters + o.ChainWriters
	in := &Ingest{tbl: tbl, h: h, o: o, stats: newCounters(),
		counterRows: newRowSet(o.Generation, o.MaxUnknown), chainRows: newRowSet(o.Generation, math.MaxInt),
		cancel:  func() { cancel(); cancelTimeout() },
		lastAck: make([]atomic.Int64, n), lastProgress: make([]atomic.Int64, n)}
	w := 0
	spawn := func(count int, run func(ctx context.Context, w int, rng *rand.Rand)) {
		for range count {
			id := w
			rng := rand.New(rand.NewPCG(o.Seed, uint64(id)+1))
			in.wg.Add(1)
			go func() {
				defer in.wg.Done()
				run(ctx, id, rng)
			}()
			w++
		}
	}
	spawn(o.ListWriters, in.listWriter)
	spawn(o.CounterWriters, in.counterWriter)
	spawn(o.ChainWriters, in.chainWriter)
	return in
}

// Options returns the run's options, defaults filled in.
func (in *Ingest) Options() IngestOptions { return in.o }

// Stop asks the writers to stop after their current operation.
func (in *Ingest) Stop() { in.cancel() }

// Wait waits for the writers to stop and returns the run's counts, and an
// error if the run could not go on (the table is missing, say).
func (in *Ingest) Wait() (IngestStats, error) {
	in.wg.Wait()
	in.cancel()
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.Stats(), in.fatal
}

// Stats returns the counts so far.
func (in *Ingest) Stats() IngestStats {
	return IngestStats{
		List: in.stats.get(KindList), Incr: in.stats.get(KindIncr),
		CAS: in.stats.get(KindCAS), Read: in.stats.get(KindRead),
		NoMatch: in.stats.noMatch.Load(),
	}
}

// Now returns the history's clock: the time line of LastAck.
func (in *Ingest) Now() int64 { return in.h.Now() }

// LastAck returns when (on the history's clock) any writer last had a
// write acknowledged; 0 if none has.
func (in *Ingest) LastAck() int64 {
	var m int64
	for i := range in.lastAck {
		m = max(m, in.lastAck[i].Load())
	}
	return m
}

// AllProgressedSince reports whether every writer has had a definite
// answer (an acknowledged write, or a CAS whose predicate did not match)
// after t.
func (in *Ingest) AllProgressedSince(t int64) bool {
	for i := range in.lastProgress {
		if in.lastProgress[i].Load() <= t {
			return false
		}
	}
	return true
}

// LongestWait returns, on the history's clock, how long the writer that
// has waited longest for progress (as AllProgressedSince counts it) has
// waited, counting from t at the earliest.
func (in *Ingest) LongestWait(t int64) int64 {
	now := in.h.Now()
	var w int64
	for i := range in.lastProgress {
		w = max(w, now-max(in.lastProgress[i].Load(), t))
	}
	return w
}

// done records an operation's outcome: in the history, the counts and the
// worker's progress.
func (in *Ingest) done(w int, id int64, k Kind, row string, out Outcome, value int64, noMatch bool, err error) {
	in.h.Return(id, out, value, noMatch, err)
	in.stats.add(k, out)
	now := in.h.Now()
	if out == Acked && k != KindRead {
		in.lastAck[w].Store(now)
	}
	if k != KindRead && (out == Acked || noMatch) {
		in.lastProgress[w].Store(now)
	}
	if noMatch {
		in.stats.noMatch.Add(1)
	}
	if out == Failed && !noMatch {
		switch status.Code(err) {
		case codes.NotFound, codes.InvalidArgument, codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated:
			in.fail(fmt.Errorf("verify: %s of row %q failed: %w", k, row, err))
		}
	}
}

// fail records an error that makes the run pointless and stops it.
func (in *Ingest) fail(err error) {
	in.mu.Lock()
	if in.fatal == nil {
		in.fatal = err
	}
	in.mu.Unlock()
	in.cancel()
}

// opContext bounds one operation. It does not derive from the run's
// context: an operation under way when the run stops finishes, so its
// outcome is known.
func (in *Ingest) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), in.o.OpTimeout)
}

// rowSet hands out the generation of shared rows (counters or chains)
// that writers use now. A generation ends after IngestOptions.Generation,
// or as soon as its rows have collected MaxUnknown operations of unknown
// outcome: each of those doubles the linearizability check's search.
type rowSet struct {
	every      time.Duration
	maxUnknown int
	// mu protects the fields below.
	mu      sync.Mutex
	gen     int
	began   time.Time
	unknown int
}

func newRowSet(every time.Duration, maxUnknown int) *rowSet {
	return &rowSet{every: every, maxUnknown: maxUnknown, began: time.Now()}
}

// current returns the generation to use.
func (r *rowSet) current() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.began) >= r.every {
		r.nextLocked()
	}
	return r.gen
}

// unknownIn records an operation of unknown outcome on generation gen.
func (r *rowSet) unknownIn(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return
	}
	if r.unknown++; r.unknown >= r.maxUnknown {
		r.nextLocked()
	}
}

func (r *rowSet) nextLocked() {
	r.gen++
	r.began, r.unknown = time.Now(), 0
}

// pause waits a little after an error so that a writer does not spin
// while the cluster recovers; it reports false if the run ended.
func pause(ctx context.Context) bool {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
