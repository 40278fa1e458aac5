package master

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestTopTabletsAndLoadColumns: after a collection round TopTablets ranks
// the tablets by requests, size or bytes; ListServers and ListTablets carry
// the same numbers; an unknown order is an invalid argument.
func TestTopTabletsAndLoadColumns(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("g", "p")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 3, s1)
	ts := c.tablets("t")
	s1.setStats(ts[0].ID, &tabulapb.TabletStats{SizeBytes: 9000, ReadsPerSec: 1, Sstables: 4})
	s1.setStats(ts[1].ID, &tabulapb.TabletStats{SizeBytes: 10, ReadsPerSec: 50, WritesPerSec: 50, ReadBytesPerSec: 1})
	s1.setStats(ts[2].ID, &tabulapb.TabletStats{SizeBytes: 100, WritesPerSec: 20, WriteBytesPerSec: 1e6, Sstables: 1})
	empty, err := mc.TopTablets(ctx, &tabulapb.TopTabletsRequest{})
	if err != nil || len(empty.GetTablets()) != 0 || empty.GetReportTimeMicros() != 0 {
		t.Fatalf("TopTablets before any report = %v, %v; want nothing", empty, err)
	}
	if _, err := m.collectLoad(ctx); err != nil {
		t.Fatal(err)
	}
	order := func(by string, n int32) []string {
		t.Helper()
		r, err := mc.TopTablets(ctx, &tabulapb.TopTabletsRequest{By: by, Limit: n})
		if err != nil {
			t.Fatal(err)
		}
		if r.GetReportTimeMicros() == 0 {
			t.Errorf("by %s: no report time", by)
		}
		var out []string
		for _, x := range r.GetTablets() {
			out = append(out, x.GetTabletId())
		}
		return out
	}
	want := func(by string, n int32, ids ...string) {
		t.Helper()
		got := order(by, n)
		if len(got) != len(ids) {
			t.Fatalf("by %s: %v, want %v", by, got, ids)
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("by %s: %v, want %v", by, got, ids)
			}
		}
	}
	want("requests", 0, ts[1].ID, ts[2].ID, ts[0].ID)
	want("", 2, ts[1].ID, ts[2].ID)
	want("size", 1, ts[0].ID)
	want("bytes", 1, ts[2].ID)
	if _, err := mc.TopTablets(ctx, &tabulapb.TopTabletsRequest{By: "colour"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("TopTablets by colour: %v, want InvalidArgument", err)
	}

	sv, err := mc.ListServers(ctx, &tabulapb.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sv.GetServers()) != 1 {
		t.Fatalf("servers %v", sv.GetServers())
	}
	if s := sv.GetServers()[0]; s.GetSizeBytes() != 9110 || s.GetReadsPerSec() != 51 || s.GetWritesPerSec() != 70 || s.GetSstables() != 5 {
		t.Errorf("ListServers load columns: %v", s)
	}
	lt, err := mc.ListTablets(ctx, &tabulapb.ListTabletsRequest{Table: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if x := lt.GetTablets()[2]; x.GetSizeBytes() != 100 || x.GetWritesPerSec() != 20 || x.GetWriteBytesPerSec() != 1e6 || x.GetSstables() != 1 {
		t.Errorf("ListTablets load columns of the last tablet: %v", x)
	}
}

// TestCollectLoadAsksOnlyForNewEvents: each round hands on the events a
// server logged since the previous round, once.
func TestCollectLoadAsksOnlyForNewEvents(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{LoadInterval: -1})
	s1 := c.startServerTTL("s1", 60)
	c.waitLeader(m)
	ctx := context.Background()
	add := func(us int64, kind string) {
		s1.mu.Lock()
		s1.events = append(s1.events, &tabulapb.ServerEvent{TimeMicros: us, Kind: kind, Table: "t", Attrs: map[string]string{"b": "2", "a": "1"}})
		s1.mu.Unlock()
	}
	kinds := func() string {
		t.Helper()
		rep, err := m.collectLoad(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range rep.Servers["s1"].Events {
			out += e.Kind + ";"
		}
		return out
	}
	add(1000, "flush")
	add(2000, "compaction")
	if got := kinds(); got != "flush;compaction;" {
		t.Fatalf("first round: %s", got)
	}
	if got := kinds(); got != "" {
		t.Fatalf("second round with nothing new: %s", got)
	}
	add(3000, "split")
	rep, _ := m.collectLoad(ctx)
	es := rep.Servers["s1"].Events
	if len(es) != 1 || es[0].Kind != "split" || es[0].Time.UnixMicro() != 3000 || len(es[0].Attrs) != 2 || es[0].Attrs[0].Key != "a" {
		t.Fatalf("third round: %+v", es)
	}
}
