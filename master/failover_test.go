package master

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

func TestDeadServersTabletsMoveWithNewEpoch(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("d", "h", "p")}); err != nil {
		t.Fatal(err)
	}
	before := waitAllLoaded(t, c, "t", 4, s1, s2)
	epochs := map[string]int64{}
	onS1 := 0
	for _, tb := range before {
		epochs[tb.ID] = tb.Epoch
		if tb.Server == "s1" {
			onS1++
		}
	}
	if onS1 == 0 {
		t.Fatal("s1 holds nothing; the test needs it to hold tablets")
	}

	s1.die()
	after := waitAllLoaded(t, c, "t", 4, s2)
	for _, tb := range after {
		want := epochs[tb.ID]
		for _, b := range before {
			if b.ID == tb.ID && b.Server == "s1" {
				want++
			}
		}
		if tb.Epoch != want || tb.Server != "s2" {
			t.Errorf("tablet %s: server %s epoch %d, want s2 epoch %d", tb.ID, tb.Server, tb.Epoch, want)
		}
	}
	// s2 was told to load each moved tablet at its new epoch.
	s2.mu.Lock()
	defer s2.mu.Unlock()
	for _, tb := range after {
		found := false
		for _, l := range s2.loads {
			if l.TabletId == tb.ID && l.Epoch == tb.Epoch {
				found = true
			}
		}
		if !found {
			t.Errorf("s2 never got LoadTablet(%s, epoch %d)", tb.ID, tb.Epoch)
		}
	}
}

// A server registering again under a new lease (a restart under the same
// id, or a server that lost etcd for a moment) may leave its old
// incarnation alive until the old lease expires. The master must not hand
// the old incarnation's tablets to anyone before that: two live owners
// acknowledge writes that overwrite each other.
func TestTabletsWaitForTheOldLeaseWhenTheirServerRegistersAgain(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	// A long TTL: the old lease must stay alive however slow the machine
	// is, so that a tablet handed on meanwhile is the master's doing.
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	before := waitAllLoaded(t, c, "t", 2, s1)
	s2 := c.startServer("s2")
	old := s1.reregister()
	for _, tb := range before {
		if tb.Lease != int64(old) {
			t.Fatalf("tablet %s assigned under lease %x, want s1's lease %x", tb.ID, tb.Lease, old)
		}
	}
	// Let the master look several times while the old lease lives.
	p0 := reconcilePasses(m)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return reconcilePasses(m) >= p0+3, "three reconcile passes"
	})
	for i, tb := range c.tablets("t") {
		if tb.Epoch != before[i].Epoch || tb.Lease != int64(old) {
			t.Fatalf("tablet %s handed on (server %s epoch %d lease %x) while the lease it was assigned under was alive", tb.ID, tb.Server, tb.Epoch, tb.Lease)
		}
	}
	// The old incarnation's lease ends: now the tablets move, each at a new
	// epoch, under a live lease.
	if _, err := s1.cli.Revoke(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		for i, tb := range c.tablets("t") {
			if tb.Epoch == before[i].Epoch {
				return false, fmt.Sprintf("tablet %s still at epoch %d", tb.ID, tb.Epoch)
			}
		}
		return true, ""
	})
	after := waitAllLoaded(t, c, "t", 2, s1, s2)
	for i, tb := range after {
		if tb.Epoch != before[i].Epoch+1 || tb.Lease == int64(old) {
			t.Fatalf("tablet %s after the old lease ended: epoch %d lease %x", tb.ID, tb.Epoch, tb.Lease)
		}
	}
}

// A tablet whose files are gone (its server answers DATA_LOSS) is not
// handed from server to server, bumping its epoch each time: no server can
// load it. The master says so and tries again only now and then.
func TestTabletWithMissingFilesIsNotHandedAround(t *testing.T) {
	c, m, s1 := oneServerWithLoadCode(t, codes.DataLoss)
	waitFor(t, 10*time.Second, func() (bool, string) {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		return len(s1.loads) > 0, "a load attempt"
	})
	c.startServer("s2")
	lookAgain(t, m, 10)
	ts := c.tablets("t")
	if len(ts) != 1 || ts[0].Epoch != 1 || ts[0].Server != "s1" {
		t.Fatalf("tablet with missing files: %+v; want it left at epoch 1 on s1", ts)
	}
	s1.mu.Lock()
	loads := len(s1.loads)
	s1.mu.Unlock()
	if loads != 1 {
		t.Fatalf("%d load attempts within the retry interval, want 1", loads)
	}
}

// A tablet its server stopped serving without the master's say (a forged
// UnloadTablet, a failed log whose release was lost) is found by the
// audit and loaded again, instead of staying down while etcd shows it
// assigned.
func TestAuditReloadsATabletItsServerNoLongerServes(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	ts := waitAllLoaded(t, c, "t", 2, s1)
	s1.mu.Lock()
	delete(s1.held, ts[0].ID) // unloaded behind the master's back
	s1.mu.Unlock()
	auditNow(m)
	waitAllLoaded(t, c, "t", 2, s1)
}

// The only server refuses the tablet's epoch (it unloaded it, say after a
// forged UnloadTablet): the master takes it back with a confirmed unload
// and gives it to that server again at a new epoch.
func TestOnlyServerRefusingAnEpochGetsTheTabletAtANewEpoch(t *testing.T) {
	c, _, s1 := oneServerWithLoadCode(t, codes.FailedPrecondition)
	waitFor(t, 20*time.Second, func() (bool, string) {
		ts := c.tablets("t")
		return len(ts) == 1 && ts[0].Epoch >= 2, fmt.Sprintf("%+v", ts)
	})
	s1.mu.Lock()
	s1.loadCode = codes.OK
	s1.mu.Unlock()
	ts := c.tablets("t")
	waitFor(t, 20*time.Second, func() (bool, string) {
		return s1.holds()[ts[0].ID] >= ts[0].Epoch, "loaded at the new epoch"
	})
}

func TestFailingServerLosesTabletToAnother(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	s1.mu.Lock()
	s1.failLoad = true
	s1.mu.Unlock()
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	// With one failing server the tablet stays there, retried.
	waitFor(t, 5*time.Second, func() (bool, string) {
		ts := c.tablets("t")
		return len(ts) == 1 && ts[0].Server == "s1", fmt.Sprintf("%+v", ts)
	})
	s2 := c.startServer("s2")
	ts := waitAllLoaded(t, c, "t", 1, s2)
	if ts[0].Epoch < 2 {
		t.Errorf("moved tablet has epoch %d, want >= 2", ts[0].Epoch)
	}
}

func TestStandbyTakesOverAndAnswersLocates(t *testing.T) {
	c := newCluster(t)
	m1 := c.startMaster(Options{})
	m2 := c.startMaster(Options{})
	s1 := c.startServer("s1")
	leader := c.waitLeader(m1, m2)
	standby := m1
	if leader == m1 {
		standby = m2
	}
	lc, sc := c.dial(leader.Addr()), c.dial(standby.Addr())
	ctx := context.Background()

	_, err := sc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf")})
	testkit.WantCode(t, "", err, codes.Unavailable, "not the leader (leader is "+leader.Addr()+")")
	if _, err := lc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	// The standby answers reads from etcd.
	ti, err := sc.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: "t", RowKey: []byte("x")})
	if err != nil || string(ti.StartKey) != "m" || ti.ServerAddress != s1.addr {
		t.Fatalf("standby LocateTablet = %v, %v", ti, err)
	}
	if d, err := sc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "t"}); err != nil || len(d.Tablets) != 2 {
		t.Fatalf("standby DescribeTable = %v, %v", d, err)
	}
	s1.mu.Lock()
	loadsBefore := len(s1.loads)
	s1.mu.Unlock()

	// Closing the leader hands over at once (it resigns).
	closed := time.Now()
	if err := leader.Close(); err != nil {
		t.Fatal(err)
	}
	if err := leader.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	c.waitLeader(standby)
	t.Logf("standby took over after %v", time.Since(closed))
	if _, err := sc.AddFamily(ctx, &tabulapb.FamilyRequest{Table: "t", Family: &tabulapb.Family{Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t2", "cf")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t2", 1, s1)
	// The new leader rebuilt its view from etcd: t's tablets keep their
	// epochs (they are re-sent to their live owner at the same epoch).
	for _, tb := range c.tablets("t") {
		if tb.Epoch != 1 || tb.Server != "s1" {
			t.Errorf("after failover tablet %s: server %s epoch %d", tb.ID, tb.Server, tb.Epoch)
		}
	}
	s1.mu.Lock()
	t.Logf("loads before failover %d, after %d", loadsBefore, len(s1.loads))
	s1.mu.Unlock()
	_, err = lc.ListTables(ctx, &tabulapb.ListTablesRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("closed master answered ListTables: %v", err)
	}
}

func TestSplitAndBalance(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	// A long TTL: the old lease must stay alive however slow the machine
	// is, so that a tablet handed on meanwhile is the master's doing.
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)

	resp, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "t", RowKey: []byte("f")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tablets) != 2 || string(resp.Tablets[0].EndKey) != "f" || string(resp.Tablets[1].StartKey) != "f" || resp.Tablets[0].Epoch != 2 {
		t.Fatalf("SplitTablet answered %v", resp)
	}
	// Splitting at a boundary changes nothing.
	again, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "t", RowKey: []byte("f")})
	if err != nil || len(again.Tablets) != 2 || len(c.tablets("t")) != 3 {
		t.Fatalf("split at a boundary: %v %v", again, err)
	}
	_, err = mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "t"})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "row_key")
	if _, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "t", RowKey: []byte("q")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 4, s1)

	s2 := c.startServer("s2")
	waitFor(t, 5*time.Second, func() (bool, string) {
		ss, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
		return err == nil && len(ss.Servers) == 2, fmt.Sprint(ss, err)
	})
	bal, err := mc.Balance(ctx, &tabulapb.BalanceRequest{})
	if err != nil || bal.Moved != 2 {
		t.Fatalf("Balance = %v, %v; want 2 moves", bal, err)
	}
	ts := waitAllLoaded(t, c, "t", 4, s1, s2)
	per := map[string]int{}
	for _, tb := range ts {
		per[tb.Server]++
	}
	if per["s1"] != 2 || per["s2"] != 2 {
		t.Errorf("after Balance: %v", per)
	}
	s1.mu.Lock()
	unloads := len(s1.unloads)
	s1.mu.Unlock()
	if unloads != 2 {
		t.Errorf("s1 got %d unloads, want 2 (a move unloads first)", unloads)
	}
	if bal, err := mc.Balance(ctx, &tabulapb.BalanceRequest{}); err != nil || bal.Moved != 0 {
		t.Errorf("second Balance = %v, %v; want no moves", bal, err)
	}
}

func TestLeaderThatLosesItsSessionStepsDown(t *testing.T) {
	c := newCluster(t)
	m1 := c.startMaster(Options{})
	m2 := c.startMaster(Options{})
	leader := c.waitLeader(m1, m2)
	standby := m1
	if leader == m1 {
		standby = m2
	}
	c.waitCandidates(2) // the standby campaigns: it, not the old leader again, is next
	ctx := context.Background()
	// Revoke the leader's election lease, as if etcd had expired it.
	resp, err := c.cli.Get(ctx, c.layout.ElectionPrefix(), clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != leader.Addr() {
		t.Fatalf("election key: %v %v", resp, err)
	}
	if _, err := c.cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return standby.IsLeader() && !leader.IsLeader(), fmt.Sprintf("standby leads %v, old leader leads %v", standby.IsLeader(), leader.IsLeader())
	})
	_, err = c.dial(leader.Addr()).CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf")})
	testkit.WantCode(t, "", err, codes.Unavailable, "leader is "+standby.Addr())
	if _, err := c.dial(standby.Addr()).CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
}

// oneServerWithLoadCode starts a master and server s1 whose LoadTablet
// answers code, and creates table t with one tablet.
func oneServerWithLoadCode(t *testing.T, code codes.Code) (*cluster, *Master, *fakeServer) {
	t.Helper()
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1 := c.startServer("s1")
	s1.mu.Lock()
	s1.loadCode = code
	s1.mu.Unlock()
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	return c, m, s1
}

// A load that takes longer than an ordinary call (replaying a long commit
// log from an object store) is waited for up to LoadTimeout, not cut at
// RPCTimeout and started again: the server sees one load, and the tablet
// is served once it finishes.
func TestSlowLoadIsNotCutShort(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{RPCTimeout: 100 * time.Millisecond, LoadTimeout: time.Minute})
	s1 := c.startServer("s1")
	gate := make(chan struct{})
	s1.mu.Lock()
	s1.loadGate = gate
	s1.mu.Unlock()
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() (bool, string) {
		return s1.loadsStarted.Load() >= 1, "the load did not reach the server"
	})
	// Several RPCTimeouts pass while the load runs.
	time.Sleep(500 * time.Millisecond)
	close(gate)
	waitFor(t, 10*time.Second, func() (bool, string) { return len(s1.holds()) == 1, "the tablet is not held" })
	if n := s1.loadsStarted.Load(); n != 1 {
		t.Fatalf("the server saw %d loads, want 1: the slow load was cut short and retried", n)
	}
}
