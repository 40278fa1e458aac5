package master

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestCollectLoad pulls the reports of two servers, one of which has died:
// the report holds every tablet of the live one with its numbers, the
// server sums, the dead server with its error, and the watchers get it.
func TestCollectLoad(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 2, s1)
	tablets := c.tablets("t")
	s1.setStats(tablets[0].ID, &tabulapb.TabletStats{SizeBytes: 1000, ReadsPerSec: 5, WritesPerSec: 2, BusyShare: 0.25,
		AccessQuantiles: [][]byte{[]byte("c")}, FamilyBytes: map[string]int64{"cf": 900}})
	s1.setStats(tablets[1].ID, &tabulapb.TabletStats{SizeBytes: 3000, WritesPerSec: 10, BusyShare: 0.5})
	s2 := c.startServer("s2")
	s2.die()

	var seen []*LoadReport
	m.OnLoadReport(func(r *LoadReport) { seen = append(seen, r) })
	if m.Loads() != nil {
		t.Fatal("a report before any round")
	}
	rev := etcdRev(t, c)
	rep, err := m.collectLoad(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Load is pulled, never written: the round leaves etcd's revision
	// where it was (docs/OPERATIONS.md "Load reports").
	if after := etcdRev(t, c); after != rev {
		t.Fatalf("a load collection round wrote to etcd: revision %d -> %d", rev, after)
	}
	if len(seen) != 1 || seen[0] != rep || m.Loads() != rep {
		t.Fatalf("the round's report was not kept and handed to the watcher")
	}
	l, ok := rep.Tablet("t", tablets[0].ID)
	if !ok || l.Server != "s1" || l.SizeBytes != 1000 || l.RequestsPerSec() != 7 || l.BusyShare != 0.25 ||
		len(l.AccessQuantiles) != 1 || l.FamilyBytes["cf"] != 900 {
		t.Fatalf("left tablet: %+v %v", l, ok)
	}
	sl := rep.Servers["s1"]
	if sl == nil || sl.Tablets != 2 || sl.SizeBytes != 4000 || sl.ReadsPerSec != 5 || sl.WritesPerSec != 12 || sl.BusyShare != 0.75 || sl.Err != "" {
		t.Fatalf("s1 sums: %+v", sl)
	}
	if len(rep.Servers) == 2 {
		if d := rep.Servers["s2"]; d.Err == "" || d.Tablets != 0 {
			t.Fatalf("dead s2: %+v", d)
		}
	}
}

// TestLoadLoopRunsOnTheLeader checks the leader collects on its own.
func TestLoadLoopRunsOnTheLeader(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: 20 * time.Millisecond})
	c.startServer("s1")
	c.waitLeader(m)
	waitFor(t, 10*time.Second, func() (bool, string) {
		r := m.Loads()
		return r != nil && r.Servers["s1"] != nil, "no report naming s1 yet"
	})
}
