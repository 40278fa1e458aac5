package master

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// countingStore counts the range reads that cover any of tablets/ (a read
// of the whole tablet map, or of a page or a table of it) made through it.
type countingStore struct {
	meta.Store
	prefix string
	ranges atomic.Int64
}

func (s *countingStore) note(ops ...clientv3.Op) {
	for _, op := range ops {
		if !op.IsGet() || len(op.RangeBytes()) == 0 {
			continue
		}
		start, end := string(op.KeyBytes()), string(op.RangeBytes())
		if start < s.prefix+"\xff" && (end == "\x00" || end > s.prefix) {
			s.ranges.Add(1)
		}
	}
}

func (s *countingStore) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	s.note(clientv3.OpGet(key, opts...))
	return s.Store.Get(ctx, key, opts...)
}

func (s *countingStore) Txn(ctx context.Context) clientv3.Txn {
	return &countingTxn{Txn: s.Store.Txn(ctx), s: s}
}

type countingTxn struct {
	clientv3.Txn
	s *countingStore
}

func (t *countingTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *countingTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.s.note(ops...)
	t.Txn = t.Txn.Then(ops...)
	return t
}
func (t *countingTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.s.note(ops...)
	t.Txn = t.Txn.Else(ops...)
	return t
}

// startCountedMaster starts a master whose store counts its reads of the
// tablet map; the test's own reads and the servers' are not counted.
func startCountedMaster(c *cluster, opts Options) (*Master, *countingStore) {
	cs := &countingStore{Store: c.cli, prefix: c.layout.AllTabletsPrefix()}
	saved := c.cli
	c.cli = cs
	m := c.startMaster(opts)
	c.cli = saved
	return m, cs
}

func splitKeys(n int) [][]byte {
	out := make([][]byte, 0, n-1)
	for i := 1; i < n; i++ {
		out = append(out, []byte(fmt.Sprintf("k%05d", i)))
	}
	return out
}

// A new leader reads the tablet map from etcd once (its index's build);
// a burst of 400 tablet changes afterwards (tables of 400 tablets created,
// assigned and loaded) reads none of it: each changed tablet is stepped on
// its own from the index. The old loop read the whole map about once per
// changed tablet.
func TestBurstOfTabletChangesReadsNoMap(t *testing.T) {
	c := newCluster(t)
	// A cluster whose assignments are mirrored already: the first leader
	// of one that is not reads the map once more, to mirror it
	// (TestLeaderMirrorsTheAssignmentsOfAnUpgradedCluster).
	if _, err := c.cli.Put(context.Background(), c.layout.AssignmentsReadyKey(), "1"); err != nil {
		t.Fatal(err)
	}
	m, cs := startCountedMaster(c, Options{})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("small", "cf")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "small", 1, s1, s2)
	if n, b := cs.ranges.Load(), m.index.buildCount(); n != 1 || b != 1 {
		t.Fatalf("a new master read the tablet map %d times (%d index builds), want once", n, b)
	}
	full0 := fullPasses(m)
	// Four tables of 100 tablets (a creation takes at most 126 split keys).
	tables := []string{"big0", "big1", "big2", "big3"}
	for _, name := range tables {
		if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema(name, "cf"), SplitKeys: splitKeys(100)}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, func() (bool, string) {
		n := 0
		for _, name := range tables {
			for _, tb := range c.tablets(name) {
				for _, s := range []*fakeServer{s1, s2} {
					if s.id == tb.Server && s.holds()[tb.ID] == tb.Epoch {
						n++
					}
				}
			}
		}
		return n == 400, fmt.Sprintf("%d of 400 tablets loaded", n)
	})
	if n := cs.ranges.Load(); n != 1 {
		t.Fatalf("the master read the tablet map %d times, want once (its index's build)", n)
	}
	// A table's creation walks the index once or twice (its schema record
	// is a table change); the 800 tablet changes that follow walk it never.
	if f := fullPasses(m) - full0; f > 2*int64(len(tables)) {
		t.Fatalf("%d passes over the whole index for %d tables' creation, want at most 2 each", f, len(tables))
	}
	// Placement counted incrementally: the least-loaded server got each.
	h1, h2 := len(s1.holds()), len(s2.holds())
	if h1+h2 != 401 || h1-h2 > 1 || h2-h1 > 1 {
		t.Fatalf("servers hold %d and %d tablets, want 401 split evenly", h1, h2)
	}
}

// An idle master reads nothing of the tablet map, however many times its
// loop runs (driven here by pokes, each a pass over the in-memory index).
func TestIdleMasterReadsNoMap(t *testing.T) {
	c := newCluster(t)
	m, cs := startCountedMaster(c, Options{})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	n0 := cs.ranges.Load()
	p0 := reconcilePasses(m)
	lookAgain(t, m, 20)
	m.mu.Lock()
	a := m.mu.leader.assign
	m.mu.Unlock()
	for range 20 {
		signal(a.wakeDue) // a loop round with nothing due
	}
	if n := cs.ranges.Load() - n0; n != 0 {
		t.Fatalf("an idle master read the tablet map %d times over %d passes", n, reconcilePasses(m)-p0)
	}
	if r := m.counters.assignments.Load(); r != 2 {
		t.Fatalf("%d assignments, want 2", r)
	}
}

// A failed load is retried from the due heap, tablet by tablet, without a
// pass over the whole index and without reading the map.
func TestFailedLoadIsRetriedFromTheDueHeap(t *testing.T) {
	c := newCluster(t)
	m, cs := startCountedMaster(c, Options{})
	s1 := c.startServer("s1")
	s1.mu.Lock()
	s1.loadCode = codes.Unavailable
	s1.mu.Unlock()
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	if _, err := mc.CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	tried := func() int {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		return len(s1.loads)
	}
	waitFor(t, 10*time.Second, func() (bool, string) { return tried() >= 1, "a first load" })
	n0, f0 := cs.ranges.Load(), fullPasses(m)
	waitFor(t, 10*time.Second, func() (bool, string) {
		return tried() >= 4, fmt.Sprintf("%d loads tried", tried())
	})
	if n, f := cs.ranges.Load()-n0, fullPasses(m)-f0; n != 0 || f != 0 {
		t.Fatalf("retrying a failed load read the map %d times and walked the index %d times, want 0", n, f)
	}
	s1.mu.Lock()
	s1.loadCode = codes.OK
	s1.mu.Unlock()
	waitAllLoaded(t, c, "t", 1, s1)
}
