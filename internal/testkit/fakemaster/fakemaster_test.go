package fakemaster

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func dial(t *testing.T, m *Master) tabulapb.MasterClient {
	t.Helper()
	cc, err := grpc.NewClient(m.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return tabulapb.NewMasterClient(cc)
}

// Lookups answer from the tablet map, are counted and announced; scripted
// errors come first, in order; a standby answers UNAVAILABLE; Update
// moves a tablet.
func TestLookupsFollowTheScript(t *testing.T) {
	m := Start(t)
	c := dial(t, m)
	ctx := context.Background()
	m.SetTablets("t", &tabulapb.TabletInfo{TabletId: "a", EndKey: []byte("m"), ServerAddress: "s1", Epoch: 1},
		&tabulapb.TabletInfo{TabletId: "b", StartKey: []byte("m"), ServerAddress: "s2", Epoch: 1})
	locate := func(row string) (*tabulapb.TabletInfo, error) {
		return c.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: "t", RowKey: []byte(row)})
	}
	if got, err := locate("x"); err != nil || got.GetTabletId() != "b" || got.GetTable() != "t" {
		t.Fatalf("locate x = %v, %v; want tablet b of t", got, err)
	}
	<-m.Arrived()
	m.Fail("LocateTablet", status.Error(codes.Internal, "first"), status.Error(codes.Aborted, "second"))
	if _, err := locate("x"); status.Code(err) != codes.Internal {
		t.Errorf("first scripted answer: %v, want Internal", err)
	}
	if _, err := locate("x"); status.Code(err) != codes.Aborted {
		t.Errorf("second scripted answer: %v, want Aborted", err)
	}
	m.Update("t", func(ts []*tabulapb.TabletInfo) []*tabulapb.TabletInfo {
		ts[1].ServerAddress, ts[1].Epoch = "s3", 2
		return ts
	})
	if got, err := locate("x"); err != nil || got.GetServerAddress() != "s3" || got.GetEpoch() != 2 {
		t.Errorf("after the move: %v, %v; want s3 at epoch 2", got, err)
	}
	if _, err := c.LocateTablet(ctx, &tabulapb.LocateTabletRequest{Table: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown table: %v, want NotFound", err)
	}
	m.SetUnavailable(true)
	if _, err := locate("x"); status.Code(err) != codes.Unavailable {
		t.Errorf("standby: %v, want Unavailable", err)
	}
	if n := m.Lookups(); n != 6 {
		t.Errorf("Lookups = %d, want 6", n)
	}
	if ts := m.Tablets("t"); len(ts) != 2 || ts[1].GetServerAddress() != "s3" {
		t.Errorf("Tablets = %v", ts)
	}
}

// A gated lookup waits until the gate closes, and arrives first.
func TestGateHoldsLookups(t *testing.T) {
	m := Start(t)
	c := dial(t, m)
	m.SetTablets("t", &tabulapb.TabletInfo{TabletId: "a"})
	gate := make(chan struct{})
	m.SetGate(gate)
	done := make(chan error, 1)
	go func() {
		_, err := c.LocateRange(context.Background(), &tabulapb.LocateRangeRequest{Table: "t"})
		done <- err
	}()
	<-m.Arrived()
	select {
	case err := <-done:
		t.Fatalf("a gated lookup answered %v before the gate opened", err)
	default:
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Admin calls are recorded: a created table can be described and its
// family modified; a drop is recorded once it succeeds.
func TestAdminCallsAreRecorded(t *testing.T) {
	m := Start(t)
	c := dial(t, m)
	ctx := context.Background()
	schema := &tabulapb.TableSchema{Name: "users", Families: []*tabulapb.Family{{Name: "cf", MaxVersions: 1}}}
	if _, err := c.CreateTable(ctx, &tabulapb.CreateTableRequest{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModifyFamily(ctx, &tabulapb.FamilyRequest{Table: "users", Family: &tabulapb.Family{Name: "cf", MaxVersions: 3}}); err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeTable(ctx, &tabulapb.DescribeTableRequest{Table: "users"})
	if err != nil || d.GetSchema().GetFamilies()[0].GetMaxVersions() != 3 {
		t.Errorf("DescribeTable = %v, %v; want cf with 3 versions", d, err)
	}
	m.Fail("DropRowRange", status.Error(codes.Unavailable, "moving"))
	req := &tabulapb.DropRowRangeRequest{Table: "users", Target: &tabulapb.DropRowRangeRequest_RowKeyPrefix{RowKeyPrefix: []byte("k")}}
	if _, err := c.DropRowRange(ctx, req); status.Code(err) != codes.Unavailable {
		t.Errorf("scripted drop: %v, want Unavailable", err)
	}
	if _, err := c.DropRowRange(ctx, req); err != nil {
		t.Fatal(err)
	}
	if n, d := len(m.Created()), m.Dropped(); n != 1 || len(d) != 1 || string(d[0].GetRowKeyPrefix()) != "k" {
		t.Errorf("created %d, dropped %v; want 1 and the one that succeeded", n, d)
	}
}
