package master

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

// dropsOf renders the DropRange calls the servers got, sorted:
// "tabletStart:[start,end)@epoch".
func dropsOf(c *cluster, table string, servers ...*fakeServer) []string {
	starts := map[string]string{}
	for _, t := range c.tablets(table) {
		starts[t.ID] = string(t.Start)
	}
	var out []string
	for _, s := range servers {
		s.mu.Lock()
		for _, d := range s.drops {
			out = append(out, fmt.Sprintf("%s:[%s,%s)@%d", starts[d.Tablet.TabletId], d.StartKey, d.EndKey, d.Tablet.Epoch))
		}
		s.drops = nil
		s.mu.Unlock()
	}
	sort.Strings(out)
	return out
}

func wantDrops(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%s: servers got drops %q, want %q", what, got, want)
	}
}

func dropPrefix(p string) *tabulapb.DropRowRangeRequest {
	return &tabulapb.DropRowRangeRequest{Table: "t", Target: &tabulapb.DropRowRangeRequest_RowKeyPrefix{RowKeyPrefix: []byte(p)}}
}

func dropAll() *tabulapb.DropRowRangeRequest {
	return &tabulapb.DropRowRangeRequest{Table: "t", Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{DeleteAllDataFromTable: true}}
}

// TestDropRowRangeAsksEveryOverlappingTablet: a prefix reaches only the
// tablets it overlaps, each with its clipped part; deleting everything
// reaches every tablet; bad requests are refused before any call.
func TestDropRowRangeAsksEveryOverlappingTablet(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("g", "n", "t")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "t", 4, s1, s2)

	if _, err := mc.DropRowRange(ctx, dropPrefix("h")); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "prefix h", dropsOf(c, "t", s1, s2), "g:[h,i)@1")
	if _, err := mc.DropRowRange(ctx, dropPrefix("n")); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "prefix n", dropsOf(c, "t", s1, s2), "n:[n,o)@1")
	// A prefix whose range crosses a boundary: "m\xff" up to "n".
	if _, err := mc.DropRowRange(ctx, dropPrefix("m\xff")); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "prefix m\\xff", dropsOf(c, "t", s1, s2), "g:[m\xff,n)@1")
	if _, err := mc.DropRowRange(ctx, dropAll()); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "everything", dropsOf(c, "t", s1, s2), ":[,g)@1", "g:[g,n)@1", "n:[n,t)@1", "t:[t,)@1")

	for name, req := range map[string]*tabulapb.DropRowRangeRequest{
		"empty prefix":   dropPrefix(""),
		"all=false":      {Table: "t", Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{}},
		"no target":      {Table: "t"},
		"bad table name": {Table: "../x", Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{DeleteAllDataFromTable: true}},
	} {
		_, err := mc.DropRowRange(ctx, req)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	_, err := mc.DropRowRange(ctx, &tabulapb.DropRowRangeRequest{Table: "nope", Target: &tabulapb.DropRowRangeRequest_DeleteAllDataFromTable{DeleteAllDataFromTable: true}})
	testkit.WantCode(t, "", err, codes.NotFound, "nope")
	wantDrops(t, "refused requests", dropsOf(c, "t", s1, s2))

	// A tablet server error that retrying cannot fix fails the call and
	// names the tablet.
	s1.mu.Lock()
	s1.dropFail = func(*tabulapb.DropRangeRequest) error { return status.Error(codes.Internal, "disk on fire") }
	s1.mu.Unlock()
	s2.mu.Lock()
	s2.dropFail = s1.dropFail
	s2.mu.Unlock()
	_, err = mc.DropRowRange(ctx, dropPrefix("h"))
	testkit.WantCode(t, "", err, codes.Internal, "disk on fire")
	if !strings.Contains(status.Convert(err).Message(), "tablet") {
		t.Errorf("error %v does not name the tablet", err)
	}
}

// TestDropRowRangeRetriesThroughRefusalsSplitAndFailover: a tablet that
// answers NotServing or UNAVAILABLE is asked again; a tablet that splits
// under the drop is finished on its children; tablets of a dead server are
// finished at their new owner, at their new epoch.
func TestDropRowRangeRetriesThroughRefusalsSplitAndFailover(t *testing.T) {
	// Long enough for a failover (a 2 s lease), short enough that a
	// drop that never finishes fails the test soon.
	defer func(d time.Duration) { dropRetryFor = d }(dropRetryFor)
	dropRetryFor = 30 * time.Second
	c := newCluster(t)
	m := c.startMaster(Options{})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("t", "cf"), SplitKeys: keys("g", "n", "t")}); err != nil {
		t.Fatal(err)
	}
	ts := waitAllLoaded(t, c, "t", 4, s1, s2)

	// Every server refuses its first two calls.
	for _, s := range []*fakeServer{s1, s2} {
		n := 0
		s.mu.Lock()
		s.dropFail = func(*tabulapb.DropRangeRequest) error {
			if n++; n == 1 {
				return status.Error(codes.Unavailable, "busy")
			}
			if n == 2 {
				return status.Error(codes.FailedPrecondition, "tablet is splitting")
			}
			return nil
		}
		s.mu.Unlock()
	}
	if _, err := mc.DropRowRange(ctx, dropAll()); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "after refusals", dropsOf(c, "t", s1, s2), ":[,g)@1", "g:[g,n)@1", "n:[n,t)@1", "t:[t,)@1")

	// Tablet [g, n) splits at k when first asked (and refuses: it is
	// closed); its children finish the drop.
	var g meta.VersionedTablet
	for _, tb := range ts {
		if string(tb.Start) == "g" {
			g = tb
		}
	}
	owner := s1
	if g.Server == "s2" {
		owner = s2
	}
	owner.mu.Lock()
	owner.dropFail = func(req *tabulapb.DropRangeRequest) error {
		if req.GetTablet().GetTabletId() != g.ID {
			return nil
		}
		owner.dropFail = nil
		left, right := g.TabletRecord, g.TabletRecord
		left.ID, right.ID = meta.NewTabletID(), meta.NewTabletID()
		left.End, right.Start = []byte("k"), []byte("k")
		left.Epoch, right.Epoch = g.Epoch+1, g.Epoch+1
		left.Parent, right.Parent = g.ID, g.ID
		if err := meta.CommitSplit(ctx, owner.cli, c.layout, g.ModRevision, g.TabletRecord, left, right); err != nil {
			t.Errorf("CommitSplit: %v", err)
		}
		delete(owner.held, g.ID)
		owner.held[left.ID], owner.held[right.ID] = left.Epoch, right.Epoch
		owner.heldTable[left.ID], owner.heldTable[right.ID] = "t", "t"
		return status.Error(codes.FailedPrecondition, "tablet is splitting")
	}
	owner.mu.Unlock()
	if _, err := mc.DropRowRange(ctx, dropPrefix("h")); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "across a split", dropsOf(c, "t", s1, s2), "g:[h,i)@2")
	if _, err := mc.DropRowRange(ctx, dropAll()); err != nil {
		t.Fatal(err)
	}
	wantDrops(t, "everything after the split", dropsOf(c, "t", s1, s2), ":[,g)@1", "g:[g,k)@2", "k:[k,n)@2", "n:[n,t)@1", "t:[t,)@1")

	// s1 dies: the drop waits for its tablets to reach s2.
	s1.die()
	if _, err := mc.DropRowRange(ctx, dropAll()); err != nil {
		t.Fatal(err)
	}
	after := waitAllLoaded(t, c, "t", 5, s2)
	var want []string
	for _, tb := range after {
		end := string(tb.End)
		want = append(want, fmt.Sprintf("%s:[%s,%s)@%d", tb.Start, tb.Start, end, tb.Epoch))
	}
	sort.Strings(want)
	wantDrops(t, "after a failover", dropsOf(c, "t", s2), want...)
}
