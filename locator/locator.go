package locator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Options configure a Locator. The zero value is ready to use.
type Options struct {
	// DialOptions are used to connect to the masters. The default is
	// plaintext (insecure transport credentials).
	DialOptions []grpc.DialOption
	// Attempts is how many rounds over all masters a lookup makes (with
	// Backoff between rounds) while the masters are unreachable or the
	// tablet is unassigned. The default is 4.
	Attempts int
	// Backoff paces those rounds. The default is Backoff's defaults.
	Backoff Backoff
	// CallTimeout bounds each call to one master, so that a master that
	// hangs does not keep the lookup from trying the next one. The default
	// is 5s.
	CallTimeout time.Duration
	// RelocateInterval is how long a Relocate answer about one tablet is
	// reused: callers that all wait on the same silent server share one
	// lookup per interval instead of sending one each. Negative: every
	// Relocate asks a master. The default is 250ms.
	RelocateInterval time.Duration
}

func (o Options) withDefaults() Options {
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.RelocateInterval == 0 {
		o.RelocateInterval = 250 * time.Millisecond
	}
	o.Backoff = o.Backoff.withDefaults()
	return o
}

// Locator maps rows to tablets, caching what the masters say. It is safe
// for concurrent use.
type Locator struct {
	opts    Options
	masters []tabulapb.MasterClient
	conns   []*grpc.ClientConn // owned; closed by Close
	cache   *cache
	flight  flight
	// recent holds Relocate answers for reuse.
	recent relocations
	// now is the clock of RelocateInterval; tests replace it.
	now func() time.Time
	// cur is the index of the master that answered last; calls start there.
	cur     atomic.Int32
	lookups atomic.Int64
	closed  atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// New returns a Locator asking the masters at addrs. Connections are made
// lazily; New fails only on bad arguments.
func New(addrs []string, opts Options) (_ *Locator, err error) {
	if len(addrs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "locator: no master address given")
	}
	opts = opts.withDefaults()
	dial := opts.DialOptions
	if len(dial) == 0 {
		dial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	var conns []*grpc.ClientConn
	defer func() {
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
		}
	}()
	masters := make([]tabulapb.MasterClient, 0, len(addrs))
	for _, a := range addrs {
		c, err := grpc.NewClient(a, dial...)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "locator: master address %q: %v", a, err)
		}
		conns = append(conns, c)
		masters = append(masters, tabulapb.NewMasterClient(c))
	}
	l := NewWithClients(masters, opts)
	l.conns = conns
	return l, nil
}

// NewWithClients returns a Locator asking the given master clients, which
// it does not own (Close leaves their connections open).
func NewWithClients(masters []tabulapb.MasterClient, opts Options) *Locator {
	return &Locator{opts: opts.withDefaults(), masters: masters, cache: newCache(), now: time.Now}
}

// Close closes the connections New made. It is idempotent.
func (l *Locator) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		for _, c := range l.conns {
			if err := c.Close(); err != nil && l.closeErr == nil {
				l.closeErr = err
			}
		}
	})
	return l.closeErr
}

// Lookups returns how many lookups the Locator has sent to masters (each
// counted once however many masters it tried).
func (l *Locator) Lookups() int64 { return l.lookups.Load() }

// CallMaster calls fn with each master in turn, starting with the one
// that answered last, until one gives an answer other than UNAVAILABLE or
// a timeout of its own CallTimeout. It returns that answer, or the last
// error when no master answered. It makes one round only; callers that
// want to wait for a master retry with a Backoff.
func (l *Locator) CallMaster(ctx context.Context, fn func(context.Context, tabulapb.MasterClient) error) error {
	return l.callMasters(ctx, func(ctx context.Context, i int) error { return fn(ctx, l.masters[i]) })
}

// CallMasterConn is CallMaster for the other services the masters serve
// on their port (the Namespaces service): fn gets a master's connection.
// A Locator made by NewWithClients has none: UNIMPLEMENTED.
func (l *Locator) CallMasterConn(ctx context.Context, fn func(context.Context, grpc.ClientConnInterface) error) error {
	if len(l.conns) != len(l.masters) {
		return status.Error(codes.Unimplemented, "locator: made from master clients, without connections")
	}
	return l.callMasters(ctx, func(ctx context.Context, i int) error { return fn(ctx, l.conns[i]) })
}

func (l *Locator) callMasters(ctx context.Context, fn func(context.Context, int) error) error {
	if l.closed.Load() {
		return status.Error(codes.Canceled, ErrClosed.Error())
	}
	if len(l.masters) == 0 {
		return status.Error(codes.Unavailable, "locator: no master configured")
	}
	start := int(l.cur.Load())
	var last error
	for i := range l.masters {
		idx := (start + i) % len(l.masters)
		cctx, cancel := context.WithTimeout(ctx, l.opts.CallTimeout)
		err := fn(cctx, idx)
		cancel()
		if err := ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		if err == nil || !(IsUnavailable(err) || status.Code(err) == codes.DeadlineExceeded) {
			l.cur.Store(int32(idx))
			return err
		}
		last = err
	}
	return last
}

// RetryMaster calls fn through CallMaster, repeating rounds with backoff
// while no master answers (UNAVAILABLE: down, starting, or not yet able
// to check credentials) or fn reports ErrUnassigned, up to Attempts.
func (l *Locator) RetryMaster(ctx context.Context, fn func(context.Context, tabulapb.MasterClient) error) error {
	var err error
	for attempt := 0; attempt < l.opts.Attempts; attempt++ {
		if attempt > 0 {
			if werr := l.opts.Backoff.Wait(ctx, attempt-1); werr != nil {
				return status.FromContextError(werr).Err()
			}
		}
		err = l.CallMaster(ctx, fn)
		if err == nil || !(IsUnavailable(err) || errors.Is(err, ErrUnassigned) || status.Code(err) == codes.DeadlineExceeded) {
			return err
		}
		if isContextStatus(err) && ctx.Err() != nil {
			return err
		}
	}
	return err
}

// Locate returns the tablet of table holding row, from the cache when it
// has it. A tablet that has no server yet is returned with an error
// wrapping ErrUnassigned after Attempts tries. Errors are gRPC status
// errors (NOT_FOUND for an unknown table) except for that one.
//
// An empty row asks for the table's first tablet (through LocateRange,
// since the empty string is not a valid row key).
func (l *Locator) Locate(ctx context.Context, table string, row []byte) (Tablet, error) {
	if t, ok := l.cache.lookup(table, row); ok {
		return t, nil
	}
	if len(row) == 0 {
		ts, err := l.LocateRange(ctx, table, nil, []byte{0})
		if err != nil {
			return Tablet{}, err
		}
		return ts[0], nil
	}
	ts, err := l.flight.do(ctx, "r\x00"+table+"\x00"+string(row), func(ctx context.Context) ([]Tablet, error) {
		// Another flight may have filled the cache meanwhile.
		if t, ok := l.cache.lookup(table, row); ok {
			return []Tablet{t}, nil
		}
		var t Tablet
		err := l.RetryMaster(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
			var err error
			t, err = l.lookupRow(ctx, m, table, row)
			return err
		})
		if err != nil {
			return []Tablet{t}, err
		}
		return []Tablet{t}, nil
	})
	if len(ts) == 0 {
		return Tablet{}, err
	}
	return ts[0], err
}

// lookupRow asks master m for the tablet of table holding row and caches
// the answer. An unassigned tablet is returned with an error wrapping
// ErrUnassigned.
func (l *Locator) lookupRow(ctx context.Context, m tabulapb.MasterClient, table string, row []byte) (Tablet, error) {
	l.lookups.Add(1)
	p, err := m.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: table, RowKey: row})
	if err != nil {
		return Tablet{}, err
	}
	t := TabletFromProto(p)
	if t.Table == "" {
		t.Table = table
	}
	if !t.Contains(row) {
		return Tablet{}, status.Errorf(codes.Internal, "locator: master answered tablet %s [%q, %q) for row %q", t.ID, t.Start, t.End, row)
	}
	l.cache.insert(t)
	if !t.Assigned() {
		return t, fmt.Errorf("%w: %s tablet %s", ErrUnassigned, table, t.ID)
	}
	return t, nil
}

// LocateRange returns the tablets of table overlapping [start, end) (end
// empty: to the end of the table), consecutive and in key order, from the
// cache when it covers the whole range. When some tablet of the range has
// no server even after Attempts tries, it returns the assigned tablets
// before it (possibly none) with an error wrapping ErrUnassigned.
func (l *Locator) LocateRange(ctx context.Context, table string, start, end []byte) ([]Tablet, error) {
	if len(end) != 0 && bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	if ts, ok := l.cache.lookupRange(table, start, end); ok {
		return ts, nil
	}
	return l.flight.do(ctx, "g\x00"+table+"\x00"+string(start)+"\x00"+string(end), func(ctx context.Context) ([]Tablet, error) {
		if ts, ok := l.cache.lookupRange(table, start, end); ok {
			return ts, nil
		}
		var ts []Tablet
		err := l.RetryMaster(ctx, func(ctx context.Context, m tabulapb.MasterClient) error {
			l.lookups.Add(1)
			resp, err := m.LocateRange(ctx, &tabulapb.LocateRangeRequest{Table: table, StartKey: start, EndKey: end})
			if err != nil {
				return err
			}
			ts = ts[:0]
			for _, p := range resp.GetTablets() {
				t := TabletFromProto(p)
				if t.Table == "" {
					t.Table = table
				}
				ts = append(ts, t)
			}
			err = checkCovers(ts, start, end)
			if err == nil || errors.Is(err, ErrUnassigned) {
				l.cache.insert(ts...)
			}
			for i, t := range ts {
				if !t.Assigned() {
					ts = ts[:i]
					break
				}
			}
			return err
		})
		if err != nil {
			if errors.Is(err, ErrUnassigned) {
				return ts, err
			}
			return nil, err
		}
		return ts, nil
	})
}

// checkCovers verifies that ts are consecutive and start with the tablet
// holding start. An answer that stops short of end (the master leaves out
// tablets from the first unassigned one on) is an error wrapping
// ErrUnassigned.
func checkCovers(ts []Tablet, start, end []byte) error {
	if len(ts) == 0 || !ts[0].Contains(start) {
		return status.Errorf(codes.Internal, "locator: master's tablets do not cover the range start %q", start)
	}
	for i := 1; i < len(ts); i++ {
		if len(ts[i-1].End) == 0 || !bytes.Equal(ts[i-1].End, ts[i].Start) {
			return status.Errorf(codes.Internal, "locator: master's tablets %s and %s are not consecutive", ts[i-1].ID, ts[i].ID)
		}
	}
	for _, t := range ts {
		if !t.Assigned() {
			return fmt.Errorf("%w: %s tablet %s", ErrUnassigned, t.Table, t.ID)
		}
	}
	last := ts[len(ts)-1]
	if len(last.End) != 0 && (len(end) == 0 || bytes.Compare(last.End, end) < 0) {
		return fmt.Errorf("%w: %s: the master's answer stops at %q, before the range end %q", ErrUnassigned, last.Table, last.End, end)
	}
	return nil
}

// Insert stores tablet locations learnt elsewhere (for example the
// children a split answered with), replacing the cached tablets they
// overlap.
func (l *Locator) Insert(ts ...Tablet) { l.cache.insert(ts...) }

// Invalidate evicts t from the cache if the cache still holds it at t's
// epoch: the entry a "not serving" answer proved stale, and not a fresher
// one another caller stored since. It reports whether it evicted.
func (l *Locator) Invalidate(t Tablet) bool { return l.cache.remove(t.Table, t.ID, t.Epoch) }

// Evict drops the cached location of a tablet, whatever its epoch.
func (l *Locator) Evict(table, tabletID string) { l.cache.remove(table, tabletID, -1) }

// EvictRow drops the cached tablet of table that holds row.
func (l *Locator) EvictRow(table string, row []byte) { l.cache.removeRow(table, row) }

// EvictTable drops every cached tablet of table.
func (l *Locator) EvictTable(table string) { l.cache.removeTable(table) }

// Cached returns the cached tablet of table holding row, without asking a
// master.
func (l *Locator) Cached(table string, row []byte) (Tablet, bool) { return l.cache.lookup(table, row) }
