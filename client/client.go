package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/locator"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// ServerTime as a Set timestamp asks the tablet server to stamp the cell
// with its clock. Such a mutation is not idempotent and is not retried
// after an ambiguous failure.
const ServerTime = cell.ServerTimestamp

// MaxMessageBytes is the largest gRPC message the client receives by
// default; the tablet server accepts and sends up to the same size.
const MaxMessageBytes = 96 << 20

// Options configure a Client. The zero value (plus master addresses) is
// ready to use.
type Options struct {
	// Masters are the master addresses (host:port), leader and standbys in
	// any order. Required.
	Masters []string
	// DialOptions are used for every connection to masters and tablet
	// servers. The default is plaintext (insecure transport credentials),
	// or TLS when TLS is set, and a receive limit of MaxMessageBytes, so
	// that rows holding values near the 64 MiB cell limit come through.
	DialOptions []grpc.DialOption
	// TLS, when set, makes every connection TLS: RootCAs verifies the
	// servers, and a client certificate, if it has one, authenticates the
	// client (its common name is the principal). The default is plaintext.
	TLS *tls.Config
	// Token, when set, is sent as a bearer token with every call (it needs
	// TLS). Tokens come from `tabula auth token create`.
	Token string
	// ConnectTimeout bounds how long NewClient waits for a master to
	// answer; a master answering UNAVAILABLE (down, or starting) is asked
	// again with Locator's backoff, up to Locator.Attempts rounds. The
	// default is 5s.
	ConnectTimeout time.Duration
	// RetryTimeout bounds the retries of one call (on top of its
	// context): after it, the last error is returned. The default is 1m.
	RetryTimeout time.Duration
	// Backoff paces retries. The default is locator.Backoff's defaults
	// (20ms doubling to 2s, with jitter).
	Backoff locator.Backoff
	// Locator configures the location cache's lookups. The default is
	// locator.Options' defaults.
	Locator locator.Options
	// AttemptTimeout bounds one attempt of a call to a tablet server: a
	// mutation, check-and-mutate, read-modify-write or sample call, one
	// MutateRows request of ApplyBulk, and each wait for the next message
	// of a read stream. An attempt that gets no answer in time fails with
	// UNAVAILABLE (its outcome is unknown): the client re-locates the
	// tablet and retries when that is safe (reads, idempotent mutations),
	// so that a hung server (paused, partitioned) does not stall callers.
	// Tablet servers send an empty message every 2s while a scan finds
	// nothing to return, so keep it well above that. Negative disables the
	// bound. The default is DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// LocationCheckDelay is how long an idempotent call (a read,
	// SampleRowKeys, a mutation whose every cell carries an explicit
	// timestamp) waits on a tablet server before the client asks a master
	// whether the tablet is still there; it asks again at that interval
	// while the wait lasts (for a read stream: each wait for its next
	// message). When the tablet has moved (another server, a newer epoch,
	// split children, or unassigned), the client abandons the wait and
	// sends the call to the new owner at once, a scan resuming after the
	// last row it returned, instead of waiting out AttemptTimeout on a
	// server that lost the tablet (paused past its lease, say). While the
	// tablet stays put the call keeps waiting: a tablet has one owner, so
	// there is no other copy to hedge to. Calls that are not idempotent
	// (ServerTime cells, CheckAndMutate, ReadModifyWrite, and ApplyBulk's
	// requests holding such rows, which it sends apart from the others)
	// are never checked and never sent twice while an attempt is
	// outstanding: abandoning them early would leave their outcome unknown
	// more often.
	// A check is one master lookup shared by all the calls waiting on the
	// tablet (Locator.RelocateInterval). Negative disables checks. The
	// default is DefaultLocationCheckDelay.
	LocationCheckDelay time.Duration
	// KeepaliveTime is how long a tablet server connection with calls in
	// flight may be silent before the client pings it; a server that does
	// not answer the ping within KeepaliveTimeout is treated as gone and
	// the connection's calls fail with UNAVAILABLE. gRPC enforces a
	// minimum of 10s. Negative disables pings. The default is 20s.
	KeepaliveTime time.Duration
	// KeepaliveTimeout is how long the client waits for a ping's answer.
	// The default is 10s.
	KeepaliveTimeout time.Duration
	// Local are tablet servers in this process (local.go): calls to the
	// tablets they serve skip gRPC and run their handlers directly, with
	// the same authentication, authorization, limits and deadlines; calls
	// to every other server go over gRPC. The gateway inside a tablet
	// server process uses it. The default is none.
	Local []LocalServer
}

// DefaultAttemptTimeout is the default Options.AttemptTimeout.
const DefaultAttemptTimeout = 10 * time.Second

// Window sizes of tablet server connections: large windows let a scan
// stream several MiB without waiting for flow-control updates.
const (
	streamWindowBytes = 8 << 20
	connWindowBytes   = 32 << 20
	bufferBytes       = 256 << 10
)

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = time.Minute
	}
	if len(o.DialOptions) == 0 {
		o.DialOptions = []grpc.DialOption{
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes)),
		}
	}
	o.DialOptions = append(o.DialOptions, o.securityDialOptions()...)
	if len(o.Locator.DialOptions) == 0 {
		o.Locator.DialOptions = o.DialOptions
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.LocationCheckDelay == 0 {
		o.LocationCheckDelay = DefaultLocationCheckDelay
	}
	if o.KeepaliveTime == 0 {
		o.KeepaliveTime = 20 * time.Second
	}
	if o.KeepaliveTimeout <= 0 {
		o.KeepaliveTimeout = 10 * time.Second
	}
	return o
}

// serverDialOptions are the dial options of tablet server connections:
// the caller's, then flow-control windows and keepalive.
func (o Options) serverDialOptions() []grpc.DialOption {
	dial := append([]grpc.DialOption{
		grpc.WithInitialWindowSize(streamWindowBytes),
		grpc.WithInitialConnWindowSize(connWindowBytes),
		grpc.WithReadBufferSize(bufferBytes),
		grpc.WithWriteBufferSize(bufferBytes),
	}, o.DialOptions...)
	if o.KeepaliveTime > 0 {
		dial = append(dial, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: o.KeepaliveTime, Timeout: o.KeepaliveTimeout,
		}))
	}
	return dial
}

// attempt returns the context of one attempt of a call under ctx, bounded
// by AttemptTimeout, and its cancel function, which takes a cause
// (errMoved when a location check abandons the attempt; nil when done).
//
// The bound is a timer that cancels the attempt (cause errAttemptTimeout),
// not a deadline: gRPC sends a deadline along (grpc-timeout), and each
// side parses it and arms a timer of its own, on every call
// (docs/BENCHMARKS.md "Requests near the gRPC floor"). The server learns
// of an abandoned attempt all the same, from the cancellation.
func (c *Client) attempt(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	actx, abandon := context.WithCancelCause(ctx)
	if c.opts.AttemptTimeout < 0 {
		return actx, abandon
	}
	t := c.attemptTimer(c.opts.AttemptTimeout, func() { abandon(errAttemptTimeout) })
	return actx, func(cause error) {
		t.Stop()
		abandon(cause)
	}
}

// timer is what the client needs of a *time.Timer made by
// time.AfterFunc: a stream's watch is reset for each message rather than
// made anew.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

func realTimer(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// errAttemptTimeout is the cause of an attempt context that timed out.
var errAttemptTimeout = errors.New("client: attempt timed out")

// attemptTimedOut reports whether an attempt under ctx failed because its
// own bound ran out (ctx itself being still live). The bound is no
// deadline the server sees (attempt), so the server never answers
// DEADLINE_EXCEEDED for it.
func attemptTimedOut(ctx, actx context.Context) bool {
	return ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout)
}

// timeoutError is the error of an attempt that timed out: UNAVAILABLE,
// since the server may or may not have applied the call.
func (c *Client) timeoutError(addr string, err error) error {
	return status.Errorf(codes.Unavailable, "client: no answer from tablet server %s within %s (attempt timeout; last: %s)",
		addr, c.opts.AttemptTimeout, status.Convert(err).Message())
}

// Client is a connection to a Tabula cluster. It is safe for concurrent
// use.
type Client struct {
	opts      Options
	loc       *locator.Locator
	pool      *pool
	afterFunc afterFuncer // of location checks
	// attemptTimer arms the timer of an attempt's AttemptTimeout (a
	// call's, or a stream's wait for its next message), and backoff
	// sleeps between retries (Options.Backoff's Wait); tests replace them
	// to time out an attempt, or end a context between attempts, at a
	// point of their choosing rather than the clock's.
	attemptTimer func(d time.Duration, f func()) timer
	backoff      func(ctx context.Context, attempt int) error
	// sleep waits a quota refusal's retry delay (quota.go).
	sleep func(ctx context.Context, d time.Duration) error
	// streamOnly holds the tablet servers that do not know the unary
	// ReadRow (readrow.go).
	streamOnly streamOnly

	closeOnce sync.Once
	closeErr  error
}

// NewClient connects to the cluster whose masters are at masterAddrs and
// checks that one of them answers (within ctx and a 5s bound).
func NewClient(ctx context.Context, masterAddrs ...string) (*Client, error) {
	return NewClientWithOptions(ctx, Options{Masters: masterAddrs})
}

// NewClientWithOptions is NewClient with options.
func NewClientWithOptions(ctx context.Context, opts Options) (_ *Client, err error) {
	if err := opts.checkSecurity(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if len(opts.Masters) == 0 {
		return nil, status.Error(codes.InvalidArgument, "client: no master address given; pass the master's host:port")
	}
	loc, err := locator.New(opts.Masters, opts.Locator)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: opts, loc: loc, pool: newPool(opts.serverDialOptions()), afterFunc: realAfterFunc,
		attemptTimer: realTimer, backoff: opts.Backoff.Wait, sleep: sleepCtx}
	c.pool.local = newLocalServers(opts)
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	// WhoAmI needs no role, and refuses a bad token at once. A master that
	// is starting answers UNAVAILABLE (with auth on, until it has read the
	// credentials from etcd): the call is retried with backoff, as
	// lookups are, within ConnectTimeout.
	err = loc.RetryMaster(cctx, func(ctx context.Context, m tabulapb.MasterClient) error {
		_, err := m.WhoAmI(ctx, &tabulapb.WhoAmIRequest{})
		return err
	})
	if code := status.Code(err); code == codes.Unauthenticated || code == codes.PermissionDenied {
		return nil, status.Errorf(code, "client: the master at %v refused the credentials: %v", opts.Masters, status.Convert(err).Message())
	}
	if err != nil {
		return nil, status.Errorf(status.Code(err), "client: no master answered at %v: %v", opts.Masters, status.Convert(err).Message())
	}
	return c, nil
}

// Close closes every connection. It is idempotent; calls in flight fail.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.pool.close(), c.loc.Close())
	})
	return c.closeErr
}

// Open returns a handle on table. It does not check that the table exists;
// the first call does.
func (c *Client) Open(table string) *Table {
	return &Table{c: c, name: cell.CanonicalTableName(table)} // "default:T" is T
}

// Admin returns the admin client of the cluster.
func (c *Client) Admin() *AdminClient { return &AdminClient{c: c} }

// pool shares one gRPC connection per tablet server address.
type pool struct {
	dial []grpc.DialOption
	// mu protects the fields below.
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
	local  localServers // Options.Local; read-only
}

func newPool(dial []grpc.DialOption) *pool {
	return &pool{dial: dial, conns: make(map[string]*grpc.ClientConn)}
}

// server returns a client for the tablet server at addr.
func (p *pool) server(addr string) (tabulapb.TabletServerClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, status.Error(codes.Canceled, "client: closed")
	}
	if ts, ok, err := p.local.server(addr); ok {
		return ts, err
	}
	conn, err := p.connLocked(addr)
	if err != nil {
		return nil, err
	}
	return tabulapb.NewTabletServerClient(conn), nil
}

// connLocked returns the gRPC connection to addr, made on first use. p.mu
// held.
func (p *pool) connLocked(addr string) (*grpc.ClientConn, error) {
	if conn, ok := p.conns[addr]; ok {
		return conn, nil
	}
	conn, err := grpc.NewClient(addr, p.dial...)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "client: tablet server address %q: %v", addr, err)
	}
	p.conns[addr] = conn
	return conn, nil
}

// bulkLoad returns a client of the BulkLoad service of the tablet server
// at addr, always over gRPC: the in-process connections of Options.Local
// carry the TabletServer service only.
func (p *pool) bulkLoad(addr string) (tabulapb.BulkLoadClient, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, status.Error(codes.Canceled, "client: closed")
	}
	conn, err := p.connLocked(addr)
	if err != nil {
		return nil, err
	}
	return tabulapb.NewBulkLoadClient(conn), nil
}

func (p *pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, c := range p.conns {
		errs = append(errs, c.Close())
	}
	p.conns = nil
	return errors.Join(errs...)
}

// Table is a handle on one table. It is safe for concurrent use.
type Table struct {
	c    *Client
	name string
}

// Name returns the table's name.
func (t *Table) Name() string { return t.name }

// tabletOp is one attempt of a call to the tablet holding a row.
type tabletOp func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error

// retrier paces the attempts of one call. Options.RetryTimeout bounds a
// streak of failures: it counts from the first failure since the last
// progress (a scan that has returned rows starts afresh).
type retrier struct {
	c       *Client
	since   time.Time // first failure of the current streak; zero if none
	attempt int
	last    error
}

func (c *Client) newRetrier() *retrier { return &retrier{c: c} }

// wait records err as the last error and sleeps before the next attempt.
// It returns the error to give up with, or nil to go on.
func (r *retrier) wait(ctx context.Context, err error) error {
	r.last = err
	now := time.Now()
	if r.since.IsZero() {
		r.since = now
	}
	if now.Sub(r.since) >= r.c.opts.RetryTimeout {
		return r.last
	}
	if d, ok := retryDelay(err); ok {
		// A quota refusal says when to come back: wait that instead.
		if werr := r.c.waitRetryDelay(ctx, d, err); werr != nil {
			if ctx.Err() != nil {
				return contextStatus(ctx, r.last)
			}
			return werr
		}
		r.attempt++
		return nil
	}
	if werr := r.c.backoff(ctx, r.attempt); werr != nil {
		return contextStatus(ctx, r.last)
	}
	r.attempt++
	return nil
}

// progress ends a streak of failures.
func (r *retrier) progress() {
	if r.attempt != 0 || !r.since.IsZero() {
		r.attempt, r.since = 0, time.Time{}
	}
}

// contextStatus is the status for a call whose context ended, naming the
// last error seen.
func contextStatus(ctx context.Context, last error) error {
	st := status.FromContextError(ctx.Err())
	if last == nil {
		return st.Err()
	}
	return status.Errorf(st.Code(), "%s (last error: %s)", st.Message(), status.Convert(last).Message())
}

// locateError classifies an error from the locator: nothing was sent to a
// tablet server, so it is retryable whenever the cause is transient.
func locateError(err error) (retry bool, st error) {
	switch {
	case errors.Is(err, locator.ErrUnassigned):
		return true, status.Error(codes.Unavailable, err.Error())
	case locator.IsUnavailable(err):
		return true, err
	}
	return false, err
}

// serverError classifies an error from a tablet server: whether to retry
// and whether the cached location is stale.
func serverError(err error, idempotent bool) (retry, evict bool) {
	if _, ok := locator.NotServingOf(err); ok {
		return true, true
	}
	if _, ok := retryDelay(err); ok {
		return true, false // a quota refused it before applying anything
	}
	switch status.Code(err) {
	case codes.Unavailable:
		return idempotent, true
	case codes.ResourceExhausted:
		return idempotent, false
	}
	return false, false
}

// do runs op against the tablet holding row, re-locating and retrying as
// the package documentation describes. An idempotent op whose tablet moves
// while it waits is abandoned and re-sent to the new owner
// (checkLocation); op never runs twice at once.
func (c *Client) do(ctx context.Context, table string, row []byte, idempotent bool, op tabletOp) error {
	r := c.newRetrier()
	for {
		if err := ctx.Err(); err != nil {
			return contextStatus(ctx, r.last)
		}
		tab, err := c.loc.Locate(ctx, table, row)
		if err != nil {
			if ctx.Err() != nil {
				return contextStatus(ctx, r.last)
			}
			retry, st := locateError(err)
			if !retry {
				return st
			}
			if err := r.wait(ctx, st); err != nil {
				return err
			}
			continue
		}
		ts, err := c.pool.server(tab.Address)
		if err != nil {
			return err
		}
		actx, cancel := c.attempt(ctx)
		var check *locationCheck
		if idempotent {
			check = c.checkLocation(actx, cancel, placed{tab, row})
		}
		err = op(actx, tab, ts)
		moved := check.stop()
		if err != nil && ctx.Err() == nil && moved != nil {
			err = moved
		} else if err != nil && attemptTimedOut(ctx, actx) {
			err = c.timeoutError(tab.Address, err)
		}
		cancel(nil)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return contextStatus(ctx, err)
		}
		if isReroute(err) {
			// The locator has cached the new location: go there now.
			r.last = err
			continue
		}
		retry, evict := serverError(err, idempotent)
		if evict {
			c.loc.Invalidate(tab)
		}
		if !retry {
			return err
		}
		if err := r.wait(ctx, err); err != nil {
			return err
		}
	}
}

// invalid is an INVALID_ARGUMENT status the client gives without asking
// a server; its message starts with "client: ", as the client's other
// messages do.
func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, "client: "+fmt.Sprintf(format, args...))
}
