package master

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit/etcdtest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
)

// cluster is one test's coordination store plus the masters and fake
// tablet servers started on it; everything is closed by t.Cleanup. The
// store is the in-memory twin of etcd (meta/memstore) unless the test
// tests etcd itself (newEtcdCluster).
type cluster struct {
	t *testing.T
	// endpoints are embedded etcd's (newEtcdCluster); nil on the twin.
	endpoints []string
	// cli is the store the test reads and writes: the twin, or a client
	// of embedded etcd.
	cli    meta.Store
	layout meta.Layout
}

// newCluster is a cluster on one in-memory twin of etcd, on real time:
// the master's session and the fake servers' leases are kept alive by
// clientv3's own keepalive loop, as on etcd. Tests end a server's lease
// by revoking it (fakeServer.die), never by waiting for it to expire.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	twin := memstore.New(memstore.Options{})
	t.Cleanup(func() { twin.Close() })
	return &cluster{t: t, cli: twin, layout: meta.NewLayout("test")}
}

// newEtcdCluster is a cluster on embedded etcd, for the tests of what
// only a real etcd does: a master cut off from it (TestReadiness) and the
// costs measured against it (TestMeasureBalancerCost).
func newEtcdCluster(t *testing.T) *cluster {
	t.Helper()
	cli := etcdtest.Client(t)
	return &cluster{t: t, endpoints: cli.Endpoints(), cli: cli, layout: meta.NewLayout("test")}
}

// onEtcd reports whether the cluster runs on embedded etcd.
func (c *cluster) onEtcd() bool { return c.endpoints != nil }

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// startMaster starts a master with a short session TTL.
func (c *cluster) startMaster(opts Options) *Master {
	c.t.Helper()
	if c.onEtcd() {
		opts.Etcd = c.endpoints
	} else {
		opts.Store = c.cli // closed by newCluster's cleanup, after the master's
	}
	opts.Cluster = "test"
	if opts.SessionTTL == 0 {
		opts.SessionTTL = time.Second
	}
	if opts.RPCTimeout == 0 {
		opts.RPCTimeout = 3 * time.Second
	}
	if opts.LoadTimeout == 0 {
		opts.LoadTimeout = 3 * time.Second
	}
	if opts.BalanceInterval == 0 {
		opts.BalanceInterval = -1 // tests that balance turn the loop on
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(c.t)
	}
	m, err := Start(context.Background(), opts)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { m.Close() })
	return m
}

// dial returns a Master client for addr.
func (c *cluster) dial(addr string) tabulapb.MasterClient {
	c.t.Helper()
	return tabulapb.NewMasterClient(c.conn(addr))
}

// conn returns a plaintext connection to addr, closed when the test ends:
// the master serves Master, Namespaces and Quotas on it.
func (c *cluster) conn(addr string) *grpc.ClientConn {
	c.t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cc.Close() })
	return cc
}

// waitLeader waits until exactly one of ms leads and returns it.
func (c *cluster) waitLeader(ms ...*Master) *Master {
	c.t.Helper()
	var leader *Master
	waitFor(c.t, 10*time.Second, func() (bool, string) {
		leader = nil
		n := 0
		for _, m := range ms {
			if m.IsLeader() {
				leader, n = m, n+1
			}
		}
		return n == 1, fmt.Sprintf("%d leaders", n)
	})
	return leader
}

// waitCandidates waits until n masters campaign: n keys under the
// election prefix. A master's first campaign runs in the background after
// Start, so a test that takes the leader's lease away must first wait
// for the standby's key, or the old leader may campaign again first.
func (c *cluster) waitCandidates(n int) {
	c.t.Helper()
	waitFor(c.t, 10*time.Second, func() (bool, string) {
		resp, err := c.cli.Get(context.Background(), c.layout.ElectionPrefix(), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err.Error()
		}
		return resp.Count == int64(n), fmt.Sprintf("%d candidates, want %d", resp.Count, n)
	})
}

// tablets reads a table's tablets from etcd.
func (c *cluster) tablets(table string) []meta.VersionedTablet {
	c.t.Helper()
	ts, _, err := meta.GetTablets(context.Background(), c.cli, c.layout, table)
	if err != nil {
		c.t.Fatal(err)
	}
	return ts
}

func waitFor(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fakeServer is an in-process tablet server that records the master's
// calls and registers servers/<id> under a 2 s lease like the real one.
type fakeServer struct {
	tabulapb.UnimplementedTabletServerServer
	id, addr string
	c        *cluster
	srv      *grpc.Server
	// cli is the cluster's twin, or on etcd a client of the fake's own.
	cli    meta.Store
	lease  clientv3.LeaseID
	stopKA context.CancelFunc

	// mu protects the fields below.
	mu        sync.Mutex
	held      map[string]int64  // tablet id → epoch
	heldTable map[string]string // tablet id → table
	loads     []*tabulapb.TabletInfo
	unloads   []*tabulapb.TabletRef
	schemas   []*tabulapb.TableSchema
	compacts  []*tabulapb.CompactTabletRequest
	flushes   []*tabulapb.TabletRef
	// midpoint is where SplitTablet without a row splits (a real server's
	// SplitKey); nil answers "no split key", as a tablet too small to cut.
	midpoint []byte
	failLoad bool
	// loadCode, when set, is the status code every LoadTablet answers.
	loadCode codes.Code
	// loadGate, when set, holds every LoadTablet until it is closed (or
	// the call's context ends, as a real server's would); loadsStarted
	// counts the calls that reached it.
	loadGate     chan struct{}
	loadsStarted atomic.Int64
	// batchLoads makes LoadTablets load each tablet of a batch as
	// LoadTablet would, in parallel, streaming each answer as it comes;
	// unset, LoadTablets answers UNIMPLEMENTED (a server that predates it).
	// batchSizes are the sizes of the LoadTablets calls served.
	batchLoads bool
	batchSizes []int
	// failStart, when set, fails the loads of the tablet starting at
	// that key (UNAVAILABLE).
	failStart string

	drops []*tabulapb.DropRangeRequest // the DropRange calls done
	// dropFail, when set, answers DropRange calls instead of doing them
	// (nil: do it) and may change itself (say, fail only once).
	dropFail func(req *tabulapb.DropRangeRequest) error
	// stats, when it names a tablet id, is the size and load ServerStats
	// reports for it (its ref and range are filled in).
	stats map[string]*tabulapb.TabletStats
	// events are the events ServerStats hands out (those at or after the
	// request's events_since_micros).
	events []*tabulapb.ServerEvent
	// statsHook, when set, sees each ServerStats request and may rewrite
	// the answer (a delta report, say).
	statsHook func(req *tabulapb.ServerStatsRequest, resp *tabulapb.ServerStatsResponse)
}

// setStats makes ServerStats report st for tablet id.
func (f *fakeServer) setStats(id string, st *tabulapb.TabletStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stats == nil {
		f.stats = map[string]*tabulapb.TabletStats{}
	}
	f.stats[id] = st
}

func (c *cluster) startServer(id string) *fakeServer {
	c.t.Helper()
	return c.startServerTTL(id, 2)
}

// startServerTTL starts a fake server whose lease has a TTL of ttl seconds.
func (c *cluster) startServerTTL(id string, ttl int64) *fakeServer {
	c.t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	f := &fakeServer{id: id, addr: lis.Addr().String(), c: c, srv: grpc.NewServer(), held: map[string]int64{}, heldTable: map[string]string{}}
	tabulapb.RegisterTabletServerServer(f.srv, f)
	served := make(chan struct{})
	go func() {
		defer close(served)
		f.srv.Serve(lis)
	}()
	c.t.Cleanup(func() { f.srv.Stop(); <-served })
	f.cli = c.cli
	if c.onEtcd() {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, DialTimeout: 5 * time.Second})
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { cli.Close() })
		f.cli = cli
	}
	ctx := context.Background()
	lr, err := f.cli.Grant(ctx, ttl)
	if err != nil {
		c.t.Fatal(err)
	}
	f.lease = lr.ID
	kctx, cancel := context.WithCancel(ctx)
	f.stopKA = cancel
	c.t.Cleanup(cancel)
	ka, err := f.cli.KeepAlive(kctx, lr.ID)
	if err != nil {
		c.t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()
	rec := meta.ServerRecord{ID: id, Address: f.addr, StartTime: time.Now().UnixMicro(), Lease: int64(lr.ID)}
	if _, err := f.cli.Put(ctx, c.layout.ServerKey(id), meta.EncodeServer(rec), clientv3.WithLease(lr.ID)); err != nil {
		c.t.Fatal(err)
	}
	return f
}

// reregister registers the server again under a new lease, as a server
// that restarted under the same id (or one that lost and regained etcd)
// does, WITHOUT revoking the old lease: its old incarnation may still be
// alive. It returns the old lease.
func (f *fakeServer) reregister() clientv3.LeaseID {
	f.c.t.Helper()
	ctx := context.Background()
	lr, err := f.cli.Grant(ctx, 2)
	if err != nil {
		f.c.t.Fatal(err)
	}
	ka, err := f.cli.KeepAlive(ctx, lr.ID)
	if err != nil {
		f.c.t.Fatal(err)
	}
	go func() {
		for range ka {
		}
	}()
	rec := meta.ServerRecord{ID: f.id, Address: f.addr, StartTime: time.Now().UnixMicro(), Lease: int64(lr.ID)}
	if _, err := f.cli.Put(ctx, f.c.layout.ServerKey(f.id), meta.EncodeServer(rec), clientv3.WithLease(lr.ID)); err != nil {
		f.c.t.Fatal(err)
	}
	old := f.lease
	f.lease = lr.ID
	return old
}

// reconcilePasses returns how many assignment passes m's current term ran.
func reconcilePasses(m *Master) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.leader == nil {
		return 0
	}
	return m.mu.leader.assign.passes.Load()
}

// fullPasses returns how many passes over the whole index m's current
// term ran.
func fullPasses(m *Master) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.leader == nil {
		return 0
	}
	return m.mu.leader.assign.fullPasses.Load()
}

// lookAgain makes m's assignment loop walk the whole index n times, one
// after another (nothing else makes an idle master look).
func lookAgain(t *testing.T, m *Master, n int) {
	t.Helper()
	for range n {
		p0 := fullPasses(m)
		waitFor(t, 10*time.Second, func() (bool, string) {
			m.mu.Lock()
			if l := m.mu.leader; l != nil {
				l.assign.poke()
			}
			m.mu.Unlock()
			return fullPasses(m) > p0, "a full pass"
		})
	}
}

// die revokes the server's lease, as if it had crashed, and stops serving.
func (f *fakeServer) die() {
	f.stopKA()
	if _, err := f.cli.Revoke(context.Background(), f.lease); err != nil {
		f.c.t.Fatal(err)
	}
	f.srv.Stop()
}

func (f *fakeServer) holds() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for k, v := range f.held {
		out[k] = v
	}
	return out
}

func (f *fakeServer) LoadTablet(ctx context.Context, req *tabulapb.LoadTabletRequest) (*tabulapb.LoadTabletResponse, error) {
	if f.loadGate != nil {
		f.loadsStarted.Add(1)
		select {
		case <-f.loadGate:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failLoad {
		return nil, fmt.Errorf("fake load failure")
	}
	if f.failStart != "" && string(req.GetTablet().GetStartKey()) == f.failStart {
		f.loads = append(f.loads, proto.Clone(req.GetTablet()).(*tabulapb.TabletInfo))
		return nil, status.Error(codes.Unavailable, "fake load failure of one tablet")
	}
	if f.loadCode != codes.OK {
		f.loads = append(f.loads, proto.Clone(req.GetTablet()).(*tabulapb.TabletInfo))
		return nil, status.Error(f.loadCode, "fake load failure")
	}
	t := req.GetTablet()
	if t.GetServerId() != f.id {
		return nil, fmt.Errorf("tablet %s is assigned to %s, not %s", t.GetTabletId(), t.GetServerId(), f.id)
	}
	f.loads = append(f.loads, proto.Clone(t).(*tabulapb.TabletInfo))
	f.held[t.GetTabletId()] = t.GetEpoch()
	f.heldTable[t.GetTabletId()] = t.GetTable()
	return &tabulapb.LoadTabletResponse{}, nil
}

func (f *fakeServer) LoadTablets(req *tabulapb.LoadTabletsRequest, stream grpc.ServerStreamingServer[tabulapb.LoadTabletsResponse]) error {
	f.mu.Lock()
	batch := f.batchLoads
	if batch {
		f.batchSizes = append(f.batchSizes, len(req.GetLoads()))
	}
	f.mu.Unlock()
	if !batch {
		return status.Error(codes.Unimplemented, "fake: no LoadTablets")
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, l := range req.GetLoads() {
		wg.Go(func() {
			_, err := f.LoadTablet(stream.Context(), l)
			st := status.Convert(err)
			mu.Lock()
			defer mu.Unlock()
			stream.Send(&tabulapb.LoadTabletsResponse{Index: uint32(i), Code: uint32(st.Code()), Message: st.Message()})
		})
	}
	wg.Wait()
	return nil
}

func (f *fakeServer) UnloadTablet(_ context.Context, req *tabulapb.UnloadTabletRequest) (*tabulapb.UnloadTabletResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unloads = append(f.unloads, req.GetTablet())
	delete(f.held, req.GetTablet().GetTabletId())
	return &tabulapb.UnloadTabletResponse{}, nil
}

// ServerStats answers the tablets the fake holds, serving under its lease.
func (f *fakeServer) ServerStats(_ context.Context, req *tabulapb.ServerStatsRequest) (*tabulapb.ServerStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &tabulapb.ServerStatsResponse{ServerId: f.id, Serving: true, Lease: int64(f.lease)}
	for _, e := range f.events {
		if e.GetTimeMicros() >= req.GetEventsSinceMicros() {
			resp.Events = append(resp.Events, e)
		}
	}
	for id, epoch := range f.held {
		st := &tabulapb.TabletStats{}
		if s, ok := f.stats[id]; ok {
			st = proto.Clone(s).(*tabulapb.TabletStats)
		}
		st.Tablet = &tabulapb.TabletRef{Table: f.heldTable[id], TabletId: id, Epoch: epoch}
		resp.Tablets = append(resp.Tablets, st)
	}
	if f.statsHook != nil {
		f.statsHook(req, resp)
	}
	return resp, nil
}

// auditNow runs the leader's audit at once.
func auditNow(m *Master) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.leader != nil {
		m.mu.leader.assign.auditNow <- struct{}{}
	}
}

func (f *fakeServer) UpdateSchema(_ context.Context, req *tabulapb.UpdateSchemaRequest) (*tabulapb.UpdateSchemaResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schemas = append(f.schemas, req.GetSchema())
	return &tabulapb.UpdateSchemaResponse{}, nil
}

func (f *fakeServer) FlushTablet(_ context.Context, ref *tabulapb.TabletRef) (*tabulapb.FlushTabletResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.held[ref.GetTabletId()]; !ok || e != ref.GetEpoch() {
		return nil, status.Errorf(codes.FailedPrecondition, "not serving %s at epoch %d", ref.GetTabletId(), ref.GetEpoch())
	}
	f.flushes = append(f.flushes, proto.Clone(ref).(*tabulapb.TabletRef))
	return &tabulapb.FlushTabletResponse{}, nil
}

func (f *fakeServer) CompactTablet(_ context.Context, req *tabulapb.CompactTabletRequest) (*tabulapb.CompactTabletResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacts = append(f.compacts, req)
	return &tabulapb.CompactTabletResponse{}, nil
}

// DropRange records the call if the fake holds the tablet at that epoch
// (else answers FAILED_PRECONDITION, as a real server's NotServing), unless
// dropFail answers.
func (f *fakeServer) DropRange(_ context.Context, req *tabulapb.DropRangeRequest) (*tabulapb.DropRangeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dropFail != nil {
		if err := f.dropFail(req); err != nil {
			return nil, err
		}
	}
	ref := req.GetTablet()
	if e, ok := f.held[ref.GetTabletId()]; !ok || e != ref.GetEpoch() {
		return nil, status.Errorf(codes.FailedPrecondition, "not serving %s at epoch %d", ref.GetTabletId(), ref.GetEpoch())
	}
	f.drops = append(f.drops, proto.Clone(req).(*tabulapb.DropRangeRequest))
	return &tabulapb.DropRangeResponse{}, nil
}

// SplitTablet splits like the real server: it commits the children with
// meta.CommitSplit at the parent's epoch+1 and holds them.
func (f *fakeServer) SplitTablet(ctx context.Context, req *tabulapb.SplitRequest) (*tabulapb.SplitTabletResponse, error) {
	ref := req.GetTablet()
	p, err := meta.GetTablet(ctx, f.cli, f.c.layout, ref.GetTable(), ref.GetTabletId())
	if err != nil {
		return nil, err
	}
	if p.Server != f.id || p.Epoch != ref.GetEpoch() {
		return nil, fmt.Errorf("not serving %s at epoch %d", ref.GetTabletId(), ref.GetEpoch())
	}
	row := req.GetRowKey()
	if len(row) == 0 {
		f.mu.Lock()
		row = f.midpoint
		f.mu.Unlock()
		if row == nil {
			return nil, status.Error(codes.FailedPrecondition, "tablet: no split key")
		}
	}
	left, right := p.TabletRecord, p.TabletRecord
	left.ID, right.ID = meta.NewTabletID(), meta.NewTabletID()
	left.End, right.Start = row, row
	left.Epoch, right.Epoch = p.Epoch+1, p.Epoch+1
	left.Parent, right.Parent = p.ID, p.ID
	if err := meta.CommitSplit(ctx, f.cli, f.c.layout, p.ModRevision, p.TabletRecord, left, right); err != nil {
		return nil, err
	}
	f.mu.Lock()
	delete(f.held, p.ID)
	f.held[left.ID], f.held[right.ID] = left.Epoch, right.Epoch
	f.heldTable[left.ID], f.heldTable[right.ID] = left.Table, right.Table
	f.mu.Unlock()
	return &tabulapb.SplitTabletResponse{Tablets: []*tabulapb.TabletInfo{left.ToProto(), right.ToProto()}}, nil
}
