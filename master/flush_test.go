package master

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/tlsconf"
)

// TestFlushTableReachesEveryTablet: FlushTable asks the server of each of
// the table's tablets, on both servers, to flush it at its current epoch,
// and no tablet of another table.
func TestFlushTableReachesEveryTablet(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{StorageRoot: t.TempDir()})
	s1, s2 := c.startServer("s1"), c.startServer("s2")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	for _, name := range []string{"f", "other"} {
		if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema(name, "a"), SplitKeys: keys("g", "n", "t")}); err != nil {
			t.Fatal(err)
		}
	}
	ts := waitAllLoaded(t, c, "f", 4, s1, s2)
	waitAllLoaded(t, c, "other", 4, s1, s2)

	if _, err := mc.FlushTable(ctx, &tabulapb.FlushTableRequest{Table: "f"}); err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, s := range []*fakeServer{s1, s2} {
		s.mu.Lock()
		for _, r := range s.flushes {
			if r.GetTable() != "f" {
				t.Errorf("%s flushed tablet %s of table %s", s.id, r.GetTabletId(), r.GetTable())
			}
			if s.held[r.GetTabletId()] != r.GetEpoch() {
				t.Errorf("%s flushed %s at epoch %d, not the one it holds", s.id, r.GetTabletId(), r.GetEpoch())
			}
			got = append(got, r.GetTabletId())
		}
		s.mu.Unlock()
	}
	for _, tb := range ts {
		want = append(want, tb.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("flushed tablets %q, want each of %q once", got, want)
	}

	_, err := mc.FlushTable(ctx, &tabulapb.FlushTableRequest{Table: "missing"})
	testkit.WantCode(t, "flush of a missing table", err, codes.NotFound, "missing")
}

// TestSplitTabletMidpoint: a midpoint split cuts the tablet named by id,
// by a row inside it, or the table's only tablet, where its server's
// SplitKey says; a table of several tablets needs one named, and a row
// split still works.
func TestSplitTabletMidpoint(t *testing.T) {
	c := newCluster(t)
	m := c.startMaster(Options{StorageRoot: t.TempDir()})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	mc := c.dial(m.Addr())
	ctx := context.Background()
	if _, err := mc.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema("sp", "a")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "sp", 1, s1)

	// A tablet too small to cut: the server's FAILED_PRECONDITION passes through.
	_, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true})
	testkit.WantCode(t, "no split key", err, codes.FailedPrecondition, "no split key")

	s1.mu.Lock()
	s1.midpoint = []byte("m")
	s1.mu.Unlock()
	resp, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true}) // the only tablet
	if err != nil || len(resp.GetTablets()) != 2 || string(resp.GetTablets()[1].GetStartKey()) != "m" {
		t.Fatalf("midpoint split of the only tablet = %v, %v", resp, err)
	}
	ts := waitAllLoaded(t, c, "sp", 2, s1)

	_, err = mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true})
	testkit.WantCode(t, "several tablets, none named", err, codes.InvalidArgument, "has 2 tablets")
	_, err = mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true, TabletId: "nope"})
	testkit.WantCode(t, "unknown tablet id", err, codes.NotFound, "no tablet nope")

	s1.mu.Lock()
	s1.midpoint = []byte("s")
	s1.mu.Unlock()
	resp, err = mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true, TabletId: ts[1].ID}) // [m, +inf)
	if err != nil || string(resp.GetTablets()[0].GetStartKey()) != "m" || string(resp.GetTablets()[1].GetStartKey()) != "s" {
		t.Fatalf("midpoint split by id = %v, %v", resp, err)
	}
	waitAllLoaded(t, c, "sp", 3, s1)
	s1.mu.Lock()
	s1.midpoint = []byte("c")
	s1.mu.Unlock()
	resp, err = mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", Midpoint: true, RowKey: []byte("b")}) // [-inf, m)
	if err != nil || string(resp.GetTablets()[1].GetStartKey()) != "c" || string(resp.GetTablets()[1].GetEndKey()) != "m" {
		t.Fatalf("midpoint split by row = %v, %v", resp, err)
	}
	waitAllLoaded(t, c, "sp", 4, s1)
	if _, err := mc.SplitTablet(ctx, &tabulapb.SplitTabletRequest{Table: "sp", RowKey: []byte("x")}); err != nil {
		t.Fatalf("split at a row: %v", err)
	}
	ts = waitAllLoaded(t, c, "sp", 5, s1)
	var starts []string
	for _, tb := range ts {
		starts = append(starts, string(tb.Start))
	}
	if !slices.Equal(starts, []string{"", "c", "m", "s", "x"}) {
		t.Errorf("tablets start at %q", starts)
	}
	desc, err := mc.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "sp"})
	if err != nil || desc.GetSplitThresholdBytes() != defaultSplitThreshold {
		t.Errorf("DescribeTable split threshold = %d, %v; want the default %d", desc.GetSplitThresholdBytes(), err, defaultSplitThreshold)
	}
	if keys := desc.GetSchema().GetUserSplitKeys(); len(keys) != 4 {
		t.Errorf("user split keys %q, want the 4 asked for (the midpoints included)", keys)
	}
}

// TestFlushTableNeedsAdmin: with authentication on, FlushTable from a
// principal with only the write role on the table is refused
// (PERMISSION_DENIED) and flushes nothing; from one with the admin role
// it flushes every tablet.
func TestFlushTableNeedsAdmin(t *testing.T) {
	c := newCluster(t)
	pki, err := tlsconf.GenerateDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := tlsconf.ServerConfig(pki.Master)
	if err != nil {
		t.Fatal(err)
	}
	m := c.startMaster(Options{StorageRoot: t.TempDir(), Auth: true, ServerTLS: serverTLS})
	s1 := c.startServer("s1")
	c.waitLeader(m)
	ctx := context.Background()
	token := func(principal, table string, role auth.Role) string {
		tok, _, err := auth.CreateToken(ctx, c.cli, c.layout, principal, "", time.Now())
		if err == nil {
			err = auth.SetGrant(ctx, c.cli, c.layout, auth.Grant{Principal: principal, Table: table, Role: role})
		}
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin, writer := token("ops", "f", auth.Admin), token("etl", "f", auth.Write)
	clientTLS, err := tlsconf.ClientConfig(tlsconf.Files{CA: pki.CA})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(m.Addr(), grpc.WithTransportCredentials(credentials.NewTLS(clientTLS)))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	mc := tabulapb.NewMasterClient(cc)
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}
	if _, err := mc.CreateTable(as(admin), &tabulapb.CreateTableRequest{Schema: schema("f", "a"), SplitKeys: keys("m")}); err != nil {
		t.Fatal(err)
	}
	waitAllLoaded(t, c, "f", 2, s1)
	flushes := func() int {
		s1.mu.Lock()
		defer s1.mu.Unlock()
		return len(s1.flushes)
	}

	_, err = mc.FlushTable(as(writer), &tabulapb.FlushTableRequest{Table: "f"})
	testkit.WantCode(t, "FlushTable with the write role", err, codes.PermissionDenied, "")
	_, err = mc.FlushTable(ctx, &tabulapb.FlushTableRequest{Table: "f"})
	testkit.WantCode(t, "FlushTable without credentials", err, codes.Unauthenticated, "")
	if n := flushes(); n != 0 {
		t.Fatalf("%d tablets flushed by refused calls, want 0", n)
	}
	if _, err := mc.FlushTable(as(admin), &tabulapb.FlushTableRequest{Table: "f"}); err != nil {
		t.Fatalf("FlushTable with the admin role: %v", err)
	}
	if n := flushes(); n != 2 {
		t.Errorf("%d tablets flushed, want both", n)
	}
}
