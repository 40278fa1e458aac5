package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/opshttp"
)

// Master is one master process: a gRPC server, an etcd client and a
// campaign for leadership. Safe for concurrent use.
type Master struct {
	tabulapb.UnimplementedMasterServer

	opts   Options
	layout meta.Layout
	log    *slog.Logger
	events *eventlog.Ring // what log kept of this master's events (Events)
	// cli is the etcd client (meta.NewClient) or Options.Store, held as a
	// meta.Store: the election too (meta.Election) needs nothing more of
	// it.
	cli meta.Store
	// ownsCli is set when Start dialed cli, which Close then closes; a
	// store handed in by Options.Store is its giver's to close.
	ownsCli bool
	// leases answers TimeToLive: cli (tests wrap it, meta/faultstore).
	leases meta.Store
	lis    net.Listener
	srv    *grpc.Server
	guard  *auth.Guard
	conns  *connPool
	// index serves locates and table reads from memory.
	index *tabletIndex
	// health is Ready as the gRPC health service sees it (health.go).
	health     *opshttp.Health
	load       loads
	bal        balancerState
	stopHealth func()
	// counters, metrics and grpcMetrics are the Prometheus side
	// (metrics.go); metrics and grpcMetrics are nil when it is off.
	counters    counters
	metrics     *metrics.Group
	grpcMetrics *metrics.GRPC

	// mergeWatch is what the automatic merge remembers (automerge.go).
	mergeWatch *mergeWatch

	// testHooks are set by tests only (adopt.go).
	testHooks testHooks

	// ctx is cancelled by Close; every background goroutine runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	// mu protects the fields below.
	mu struct {
		sync.Mutex
		// leader is set while this master is the leader.
		leader *leadership
		// session is the election session of the current campaign, nil
		// while none could be opened (etcd unreachable).
		session *meta.Session
	}
}

// leadership is one term of office.
type leadership struct {
	// ctx is cancelled when the term ends.
	ctx context.Context
	// key and rev name the election key; every write of the term is guarded
	// by it still existing at rev.
	key string
	rev int64
	// assign runs the assignment loop of the term.
	assign *assigner
}

// guard is the condition that holds only while this term lasts.
func (l *leadership) guard() meta.Guard {
	return meta.LeaderGuard(l.key, l.rev)
}

// Start starts a master: it serves gRPC at once (a standby answers reads
// from etcd) and campaigns for leadership in the background.
func Start(ctx context.Context, opts Options) (_ *Master, err error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", opts.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("master: listening on %s: %w", opts.ListenAddr, err)
	}
	defer func() {
		if err != nil {
			lis.Close()
		}
	}()
	opts.fillAddrs(lis)
	cli, ownsCli := opts.Store, false
	if cli == nil {
		if cli, err = meta.NewClient(context.WithoutCancel(ctx), opts.Etcd, opts.EtcdTLS); err != nil {
			return nil, fmt.Errorf("master: connecting to etcd %v: %w", opts.Etcd, err)
		}
		ownsCli = true
	}
	events := eventlog.NewRing(eventlog.DefaultSize)
	m := &Master{
		opts:   opts,
		layout: opts.layout(),
		log:    eventlog.Logger(opts.Logger, events).With("master", opts.ID),
		events: events,
		cli:    cli,
		leases: cli,
		lis:    lis,
		conns:  newConnPool(opts.DialTLS),

		mergeWatch: newMergeWatch(),
	}
	m.ownsCli = ownsCli
	m.bal.kick = make(chan struct{}, 1)
	m.index = newTabletIndex(cli, m.layout, m.log, 0)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	var creds *auth.Cache
	m.guard, creds = newGuard(opts, cli, m.layout, m.log)
	m.srv = grpc.NewServer(append(m.setupMetrics(), m.serverOptions()...)...)
	tabulapb.RegisterMasterServer(m.srv, m)
	tabulapb.RegisterNamespacesServer(m.srv, namespaceServer{m: m})
	tabulapb.RegisterQuotasServer(m.srv, quotaServer{m: m})
	tabulapb.RegisterSnapshotsServer(m.srv, snapshotServer{m: m})
	tabulapb.RegisterBackupSchedulesServer(m.srv, backupScheduleServer{m: m})
	m.health = opshttp.NewHealth(m.Ready)
	m.health.Register(m.srv)
	m.grpcMetrics.Init(m.srv)
	m.stopHealth = m.health.Start()
	if creds != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			creds.Run(m.ctx)
		}()
	}
	m.startQuotaUsage()
	m.wg.Add(3)
	go func() {
		defer m.wg.Done()
		m.index.run(m.ctx)
	}()
	go func() {
		defer m.wg.Done()
		if err := m.srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			m.log.Error("gRPC server stopped", "err", err)
		}
	}()
	go func() {
		defer m.wg.Done()
		m.campaignLoop()
	}()
	m.log.Info("master started", "addr", opts.AdvertiseAddr)
	return m, nil
}

// Addr returns the address clients use to reach this master.
func (m *Master) Addr() string { return m.opts.AdvertiseAddr }

// IsLeader reports whether this master is the leader now.
func (m *Master) IsLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.leader != nil
}

// Close resigns leadership (so a standby takes over at once), stops the
// gRPC server and releases everything. It is idempotent.
func (m *Master) Close() error {
	m.closeOnce.Do(func() {
		m.health.Shutdown() // first: balancers stop sending calls
		m.cancel()
		m.stopHealth()
		m.srv.Stop()
		m.wg.Wait()
		m.conns.close()
		if m.ownsCli {
			m.closeErr = m.cli.Close()
		}
		m.metrics.Close()
		m.log.Info("master stopped")
	})
	return m.closeErr
}

// lead returns the current term, or ErrNotLeader naming the leader.
func (m *Master) lead(ctx context.Context) (*leadership, error) {
	m.mu.Lock()
	l := m.mu.leader
	m.mu.Unlock()
	if l != nil {
		return l, nil
	}
	if m.ctx.Err() != nil {
		return nil, ErrClosed
	}
	if addr := m.leaderAddr(ctx); addr != "" {
		return nil, fmt.Errorf("%w (leader is %s)", ErrNotLeader, addr)
	}
	return nil, fmt.Errorf("%w (no leader is elected yet; retry)", ErrNotLeader)
}

// leaderAddr reads the current leader's address from the election, or "".
func (m *Master) leaderAddr(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addr, err := meta.LeaderAddress(ctx, m.cli, m.layout)
	if err != nil {
		return ""
	}
	return addr
}
