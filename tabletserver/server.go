package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/opshttp"
	"github.com/tabuladb/tabula/quota"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/load"
	"github.com/tabuladb/tabula/tabletserver/loadreport"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// Server is a running tablet server. Its methods are safe for concurrent
// use.
//
// Lock order: keys (one tablet's; a merge takes its left tablet's before
// its right's, a split its parent's before its children's) → closeMu →
// the engine's locks (tabletserver/tablet/tablet.go) → mu; and keys →
// walMu. leaseMu, engines, logRenew.mu, loads.mu, a tablet's hot.mu and
// the groups' mu are leaves: nothing else is locked while one of them is
// held. Of the server's locks only keys and closeMu are held over an
// engine call that may block (open, flush, split, close): an engine calls
// back into the server (OnFailure, which starts a goroutine) while
// holding its own locks.
//
// Why each lock is a lock of its own:
//   - keys serializes the load, unload, split, merge and retirement of one
//     tablet, and only of that tablet: loads of a server's tablets open
//     their engines side by side (TestOneTabletsOpenDoesNotHoldUpAnother).
//   - closeMu keeps abandon (the lease is gone) from closing tablets that
//     Close or an unload is flushing; it is held over flushes, so it
//     cannot be mu.
//   - mu guards the served set, read on every data call: held briefly,
//     never over I/O.
//   - leaseMu orders changes of the lease state, so a renewal never waits
//     for a flush or a load.
//   - walMu guards the shared log and is held while one is opened or
//     closed (I/O), so that one replacement of a failed log runs at a
//     time; loads, the log renewal and the metrics wait on it, data calls
//     never do.
//   - engines reserves a tablet folder while its engine opens, without
//     holding anything else over the open.
type Server struct {
	tabulapb.UnimplementedTabletServerServer

	opts     Options
	id, addr string
	layout   meta.Layout
	logger   *slog.Logger
	events   *eventlog.Ring // the events logger has logged (Events)
	etcd     meta.Store     // client or Options.Store, or what Options.WrapStore made of it
	client   io.Closer      // the etcd client under etcd (meta.NewClient); closed by Close; nil when Options.Store is set
	lis      net.Listener
	grpc     *grpc.Server
	syncMode wal.SyncMode

	// The gRPC port's interceptors, in order (security.go), which
	// in-process calls run too; and those calls in flight (inprocess.go).
	unary  []grpc.UnaryServerInterceptor
	stream []grpc.StreamServerInterceptor
	local  localCalls
	// rows runs MutateRows' rows (rowworkers.go).
	rows *rowWorkers

	// Shared by every tablet of the server.
	cache   *sstable.Cache
	memory  *tablet.MemoryBudget
	limiter *tablet.Limiter

	// Lease state (lease.go). base is the monotonic origin of safeUntil,
	// which is nanoseconds since base; 0 means fenced.
	base   time.Time
	fences atomic.Int64 // how many times the server fenced
	// leaseMu serializes changes of the lease state below (reads of the
	// atomics need no lock).
	leaseMu   sync.Mutex
	safeUntil atomic.Int64
	leaseID   atomic.Int64
	fenced    bool // paused: set by pause and abandon, cleared by a renewal or register
	abandoned bool // the lease is gone: set by abandon, cleared by register
	// pastLeases holds every lease this process was granted: tablets
	// assigned under them are this process's to release.
	pastLeases map[int64]bool

	// walMu protects the shared commit log new tablets attach to
	// (sharedlog.go), walN, which counts the logs this process started,
	// and walClosed, set by Close once the log is closed: no log is
	// started after it (a lease renewal racing Close would leak one).
	walMu     sync.Mutex
	wal       *sharedlog.Log
	walN      int
	walClosed bool

	// keys serializes the load, unload, split, merge and retirement of one
	// tablet.
	keys keyLocks
	// loads is the server's record of the loads it was asked for, for
	// readiness (health.go).
	loads loadRecord
	// health is Ready as the gRPC health service sees it.
	health     *opshttp.Health
	loadRolled atomic.Int64 // unix micros of the last rollLoad
	stopHealth func()

	// assignmentEvents counts the changes of tablets etcd told this
	// server about (watch.go): only its own, once the cluster keeps
	// assignments/.
	assignmentEvents atomic.Int64
	// ownAssignments is set while the server follows its own mirrors
	// rather than the whole map.
	ownAssignments atomic.Bool

	// reports is what ServerStats last sent, for delta reports.
	reports loadreport.Reporter

	// engines is every engine this process opened, by folder, and the
	// folders whose engine is opening (openEngine).
	engines struct {
		sync.Mutex
		m       map[string]*tablet.Tablet
		opening map[string]bool
		// pruned is len(m) after its closed engines were last dropped:
		// they are dropped once m has doubled since, not at every open
		// (a walk of m per open was quadratic in a server's tablets:
		// docs/BENCHMARKS.md "A dead server's tablets in batched loads").
		pruned int
	}

	// closeMu is held by abandon while it closes the tablets, and by
	// Close and unload while they flush and close them, so an abandon
	// never closes a tablet under a flush.
	closeMu sync.Mutex

	// schemaCache is what loads read schemas through (tablets.go), fresh
	// the records of fresh tablets that loads write together (fresh.go);
	// their locks are leaves: nothing is locked while one is held.
	schemaCache schemaCache
	// loadSem bounds the tablets of batched loads opened at once
	// (Options.LoadParallelism, loadbatch.go).
	loadSem chan struct{}
	fresh   freshWrites

	// mu protects the fields below.
	mu      sync.RWMutex
	tablets map[string]*held                 // by tabletKey(table, id)
	schemas map[string]*tabulapb.TableSchema // latest schema per table
	// gen is bumped by every abandon; changed under mu, so that install
	// sees it together with the tablets, and read without it by owns on
	// the data path.
	gen     atomic.Uint64
	parents []splitParent // split parents whose folders wait for deletion
	// unloaded is the highest epoch each tablet was unloaded at: loads at
	// that epoch or below are refused. One entry per tablet ever unloaded
	// by this process (a few dozen bytes each).
	unloaded map[string]int64

	// testHookSplitCommitted, set by tests, runs after a split's etcd
	// commit and before the children are opened.
	testHookSplitCommitted func(left, right meta.TabletRecord)
	// testHookMergeWritten, set by tests, runs after a merge's manifest is
	// written and before its etcd commit.
	testHookMergeWritten func(merged meta.TabletRecord)

	scans    chan struct{} // one token per running ReadRows stream (Options.MaxScans)
	failures atomic.Int64  // tablets retired after a failure
	logRenew logRenewal    // the replacement of a failed shared log (logrenew.go)

	counters counters       // exported by the metrics collector (metrics.go)
	metrics  *serverMetrics // nil when Options.Metrics is nil
	quotas   *quota.Limiter // the quotas this server enforces (quota.go)

	// The server's goroutines (lifecycle.go): lease runs the lease loop
	// under the root context; work runs all the others under a context
	// derived from it, and stops first.
	lease, work group

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// held is a tablet the server serves at an epoch.
type held struct {
	table, id string
	epoch     int64
	dir       string
	t         *tablet.Tablet
	gen       uint64      // the server generation (registration) it was installed in
	splitting atomic.Bool // data calls get NotServing while set
	load      load.Meter  // opened by install
	hot       hotState    // hot windows and cooldown for load splits (hotsplit.go)
}

func tabletKey(table, id string) string { return table + "/" + id }

// Start opens the server: it listens, registers servers/<id> in etcd under
// a new lease, serves gRPC and starts the lease and split loops.
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	syncMode, _ := wal.ParseSyncMode(opts.SyncMode) // checked by withDefaults
	events := eventlog.NewRing(eventlog.DefaultSize)
	if opts.DataDir, err = filepath.Abs(opts.DataDir); err != nil {
		return nil, fmt.Errorf("tabletserver: %w", err)
	}
	if err := vfs.Or(opts.FS).MkdirAll(opts.DataDir); err != nil {
		return nil, fmt.Errorf("tabletserver: %w", err)
	}
	s := &Server{
		opts: opts, layout: opts.layout(), logger: eventlog.Logger(opts.Logger, events), events: events, syncMode: syncMode,
		cache:    sstable.NewCache(opts.CacheBytes),
		memory:   tablet.NewMemoryBudget(opts.MemtableSoftLimit, opts.MemtableHardLimit),
		limiter:  tablet.NewLimiter(opts.Compactions),
		base:     time.Now(),
		tablets:  make(map[string]*held),
		schemas:  make(map[string]*tabulapb.TableSchema),
		unloaded: make(map[string]int64),
		loadSem:  make(chan struct{}, opts.LoadParallelism),
		rows:     newRowWorkers(maxRowWorkers),
	}
	s.engines.m = make(map[string]*tablet.Tablet)
	s.engines.opening = make(map[string]bool)
	s.metrics = newServerMetrics(s, opts.Metrics)
	defer func() {
		if err != nil {
			s.metrics.close()
			s.rows.stop()
		}
	}()
	s.pastLeases = make(map[int64]bool)
	s.scans = make(chan struct{}, opts.MaxScans)
	s.lis, err = net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("tabletserver: listen on %s: %w", opts.ListenAddr, err)
	}
	defer func() {
		if err != nil {
			s.lis.Close()
		}
	}()
	s.addr = opts.AdvertiseAddr
	if s.addr == "" {
		s.addr = s.lis.Addr().String()
	}
	s.id = opts.ID
	if s.id == "" {
		s.id = s.addr
	}
	s.logger = s.logger.With("server", s.id)
	s.etcd = opts.Store
	if s.etcd == nil {
		client, dialErr := meta.NewClient(nil, opts.Etcd, opts.EtcdTLS)
		if dialErr != nil {
			return nil, fmt.Errorf("tabletserver: etcd client: %w", dialErr)
		}
		defer func() {
			if err != nil {
				client.Close()
			}
		}()
		s.client, s.etcd = client, client
	}
	if opts.WrapStore != nil {
		s.etcd = opts.WrapStore(s.etcd)
	}
	if err := s.register(ctx); err != nil {
		return nil, fmt.Errorf("tabletserver: registering %s in etcd: %w", s.id, err)
	}

	// The root context ends with Close (lifecycle.go); the credentials
	// cache follows etcd under the work context.
	s.lease.start(context.Background())
	s.work.start(s.lease.ctx)
	defer func() {
		if err != nil {
			s.work.stop()
			s.lease.stop()
		}
	}()
	s.grpc = grpc.NewServer(s.serverOptions(s.work.ctx)...)
	tabulapb.RegisterTabletServerServer(s.grpc, s)
	tabulapb.RegisterBulkLoadServer(s.grpc, bulkLoadServer{s: s})
	s.health = opshttp.NewHealth(s.Ready)
	s.health.Register(s.grpc)
	tabulapb.RegisterTabletSnapshotsServer(s.grpc, snapshotServer{s: s})
	if s.metrics != nil {
		s.metrics.grpc.Init(s.grpc)
	}
	s.work.run(func(context.Context) {
		if err := s.grpc.Serve(s.lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.logger.Error("grpc serve", "err", err)
		}
	})
	s.lease.run(s.leaseLoop)
	s.work.run(s.watchAssignments)
	if opts.SplitCheckInterval > 0 {
		s.work.run(s.splitLoop)
	}
	if opts.LoadWindow > 0 {
		s.work.run(s.loadLoop)
	}
	s.stopHealth = s.health.Start()
	s.logger.Info("serving", "address", s.addr)
	return s, nil
}

// grpcServerOptions tune the server for the data path: messages up to
// 96 MiB (cells up to 64 MiB), flow-control windows large enough that a
// scan streams several MiB per round trip, bigger socket buffers, a pool
// of stream workers (reusing goroutines whose stacks have already grown
// instead of a new goroutine per call), and a keepalive policy that lets
// clients ping every few seconds to detect a hung server.
func grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		// The proto codec, plus scan batches sent as the bytes they were
		// encoded into (convert.Codec).
		grpc.ForceServerCodecV2(convert.Codec{}),
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.InitialWindowSize(8 << 20),
		grpc.InitialConnWindowSize(32 << 20),
		grpc.ReadBufferSize(256 << 10),
		grpc.WriteBufferSize(256 << 10),
		grpc.NumStreamWorkers(uint32(4 * runtime.GOMAXPROCS(0))),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		// Streams per connection: with MaxScans, what one client can pin.
		grpc.MaxConcurrentStreams(maxStreamsPerConn),
		// A connection without calls for this long is closed (clients
		// reconnect when they need it).
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 15 * time.Minute}),
	}
}

// maxStreamsPerConn is the gRPC streams one client connection may run at
// once on a tablet server.
const maxStreamsPerConn = 1000

// Addr returns the address clients dial.
func (s *Server) Addr() string { return s.addr }

// ID returns the server's id in etcd.
func (s *Server) ID() string { return s.id }

// Fences returns how many times the server has fenced itself.
func (s *Server) Fences() int64 { return s.fences.Load() }

// Serving reports whether the server may serve now: its lease is safe and
// it is not closed.
func (s *Server) Serving() bool { return !s.closed.Load() && s.leaseSafe() }

// keyLocks is a set of mutexes by key, created on demand.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns the unlock function.
func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyLock)
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.mu.Lock()
	return k.unlocker(key, l)
}

// tryLock locks key if no one holds it or waits for it, without waiting.
func (k *keyLocks) tryLock(key string) (func(), bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m[key] != nil {
		return nil, false
	}
	if k.m == nil {
		k.m = make(map[string]*keyLock)
	}
	l := &keyLock{refs: 1}
	l.mu.Lock()
	k.m[key] = l
	return k.unlocker(key, l), true
}

func (k *keyLocks) unlocker(key string, l *keyLock) func() {
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
