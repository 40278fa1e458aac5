package master

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/meta"
)

// MergeTablets merges like the real server: both tablets must be held
// here at their epochs (else FAILED_PRECONDITION, as NotServing), and the
// merged tablet is committed with meta.CommitMerge at max(epochs)+1.
func (f *fakeServer) MergeTablets(ctx context.Context, req *tabulapb.MergeRequest) (*tabulapb.MergeResponse, error) {
	var parents [2]meta.VersionedTablet
	f.mu.Lock()
	for i, ref := range []*tabulapb.TabletRef{req.GetLeft(), req.GetRight()} {
		if e, ok := f.held[ref.GetTabletId()]; !ok || e != ref.GetEpoch() {
			f.mu.Unlock()
			return nil, status.Errorf(codes.FailedPrecondition, "not serving %s at epoch %d", ref.GetTabletId(), ref.GetEpoch())
		}
		p, err := meta.GetTablet(ctx, f.cli, f.c.layout, ref.GetTable(), ref.GetTabletId())
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		parents[i] = p
	}
	f.mu.Unlock()
	l, r := parents[0], parents[1]
	merged := meta.TabletRecord{Table: l.Table, ID: meta.NewTabletID(), Start: l.Start, End: r.End, State: meta.StateAssigned,
		Server: f.id, Address: f.addr, Lease: int64(f.lease), Epoch: max(l.Epoch, r.Epoch) + 1, MergedFrom: []string{l.ID, r.ID}}
	if err := meta.CommitMerge(ctx, f.cli, f.c.layout, l.ModRevision, r.ModRevision, l.TabletRecord, r.TabletRecord, merged); err != nil {
		return nil, err
	}
	f.mu.Lock()
	delete(f.held, l.ID)
	delete(f.held, r.ID)
	f.held[merged.ID], f.heldTable[merged.ID] = merged.Epoch, merged.Table
	f.mu.Unlock()
	return &tabulapb.MergeResponse{Tablet: merged.ToProto()}, nil
}

// loadedEverywhere waits until every tablet of table is held by the
// server etcd names, at its epoch.
func loadedEverywhere(c *cluster, table string, servers ...*fakeServer) {
	c.t.Helper()
	waitFor(c.t, 10*time.Second, func() (bool, string) {
		for _, t := range c.tablets(table) {
			held := false
			for _, f := range servers {
				if e, ok := f.holds()[t.ID]; ok && f.id == t.Server && e == t.Epoch {
					held = true
				}
			}
			if !held {
				return false, "tablet " + t.ID + " not loaded where etcd says"
			}
		}
		return true, ""
	})
}

// The pair to merge sits on two servers: the master moves the right one
// to the left one's server, waits for it to load, and has that server
// merge them. The user split key it crossed is forgotten; the other stays.
func TestMergeTabletsAcrossTwoServers(t *testing.T) {
	c := newCluster(t)
	s1 := c.startServer("s1")
	m := c.startMaster(Options{})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("users", "a"), SplitKeys: keys("g", "p")}); err != nil {
		t.Fatal(err)
	}
	loadedEverywhere(c, "users", s1)
	s2 := c.startServer("s2")
	// Move [g, p) to s2 as the balancer would.
	term, err := m.lead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvs, err := meta.GetServers(ctx, c.cli, c.layout)
	if err != nil {
		t.Fatal(err)
	}
	var s2rec meta.ServerRecord
	for _, s := range srvs {
		if s.ID == "s2" {
			s2rec = s
		}
	}
	if err := m.move(ctx, term, c.tablets("users")[1], s2rec); err != nil {
		t.Fatal(err)
	}
	term.assign.poke()
	loadedEverywhere(c, "users", s1, s2)
	if got := c.tablets("users")[1].Server; got != "s2" {
		t.Fatalf("middle tablet on %s, want s2", got)
	}

	resp, err := mc.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: "users", StartKey: []byte("b"), EndKey: []byte("h")})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Merges != 1 || len(resp.Tablet.StartKey) != 0 || string(resp.Tablet.EndKey) != "p" || resp.Tablet.ServerId != "s1" {
		t.Fatalf("MergeTablets answered %+v", resp)
	}
	ts := c.tablets("users")
	if len(ts) != 2 || ts[0].ID != resp.Tablet.TabletId || len(ts[0].MergedFrom) != 2 || string(ts[1].Start) != "p" {
		t.Fatalf("tablets after the merge: %+v", ts)
	}
	rec, _, err := meta.GetTable(ctx, c.cli, c.layout, "users")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(rec.Schema.UserSplitKeys, keys("p"), bytes.Equal) {
		t.Fatalf("user split keys after merging across g: %q, want [p]", rec.Schema.UserSplitKeys)
	}
	// A range one tablet covers already: nothing to do.
	resp, err = mc.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: "users", StartKey: []byte("c"), EndKey: []byte("d")})
	if err != nil || resp.Merges != 0 {
		t.Fatalf("merge inside one tablet: %+v, %v", resp, err)
	}
	// The whole table, on one server now: one more merge.
	loadedEverywhere(c, "users", s1, s2)
	resp, err = mc.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: "users"})
	if err != nil || resp.Merges != 1 || len(resp.Tablet.EndKey) != 0 {
		t.Fatalf("merging the whole table: %+v, %v", resp, err)
	}
	if ts := c.tablets("users"); len(ts) != 1 {
		t.Fatalf("%d tablets after merging the whole table", len(ts))
	}
	_, err = mc.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: "users", StartKey: []byte("z"), EndKey: []byte("a")})
	testkit.WantCode(t, "", err, codes.InvalidArgument, "")
	_, err = mc.MergeTablets(ctx, &tabulapb.MergeTabletsRequest{Table: "nope"})
	testkit.WantCode(t, "", err, codes.NotFound, "")
}

// CreateTable's split keys and an operator's SplitTablet row are the
// table's user split keys.
func TestUserSplitKeysAreRecorded(t *testing.T) {
	c := newCluster(t)
	s1 := c.startServer("s1")
	m := c.startMaster(Options{})
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	sch := schema("users", "a")
	sch.AutoMergeDisabled = true
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: sch, SplitKeys: keys("g", "p")}); err != nil {
		t.Fatal(err)
	}
	loadedEverywhere(c, "users", s1)
	if _, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "users", RowKey: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	rec, _, err := meta.GetTable(ctx, c.cli, c.layout, "users")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(rec.Schema.UserSplitKeys, keys("g", "k", "p"), bytes.Equal) || !rec.Schema.AutoMergeDisabled {
		t.Fatalf("schema after CreateTable and SplitTablet: keys %q, auto merge disabled %v", rec.Schema.UserSplitKeys, rec.Schema.AutoMergeDisabled)
	}
}
