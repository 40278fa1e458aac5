package locator

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/api/tabulapb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// fakeMaster answers locates from an in-memory tablet map.
type fakeMaster struct {
	tabulapb.UnimplementedMasterServer
	addr string

	// mu protects the fields below.
	mu          sync.Mutex
	tablets     map[string][]*tabulapb.TabletInfo // sorted by start key
	calls       int
	unavailable bool          // answer UNAVAILABLE (a standby, say)
	gate        chan struct{} // when set, locates wait for it to close
	arrived     chan struct{} // receives once per locate call (non-blocking)
}

func startFakeMaster(t *testing.T) *fakeMaster {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeMaster{addr: lis.Addr().String(), tablets: map[string][]*tabulapb.TabletInfo{}, arrived: make(chan struct{}, 1000)}
	s := grpc.NewServer()
	tabulapb.RegisterMasterServer(s, m)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Serve(lis) }()
	t.Cleanup(func() { s.Stop(); wg.Wait() })
	return m
}

// setTablets replaces table's tablets: split points and, per tablet, an
// address and epoch.
func (m *fakeMaster) setTablets(table string, tablets ...*tabulapb.TabletInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range tablets {
		t.Table = table
	}
	m.tablets[table] = tablets
}

func tablet(id, start, end, addr string, epoch int64) *tabulapb.TabletInfo {
	state := "assigned"
	if addr == "" {
		state = "unassigned"
	}
	return &tabulapb.TabletInfo{TabletId: id, StartKey: []byte(start), EndKey: []byte(end),
		ServerId: "s-" + addr, ServerAddress: addr, Epoch: epoch, State: state}
}

func (m *fakeMaster) enter(ctx context.Context) error {
	m.mu.Lock()
	m.calls++
	gate, unavailable := m.gate, m.unavailable
	m.mu.Unlock()
	select {
	case m.arrived <- struct{}{}:
	default:
	}
	if unavailable {
		return status.Error(codes.Unavailable, "master: not the leader")
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (m *fakeMaster) callCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func (m *fakeMaster) LocateTablet(ctx context.Context, req *tabulapb.LocateTabletRequest) (*tabulapb.TabletInfo, error) {
	if err := m.enter(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, ok := m.tablets[req.GetTable()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "master: no table %q", req.GetTable())
	}
	for _, t := range ts {
		if bytes.Compare(req.GetRowKey(), t.StartKey) >= 0 && (len(t.EndKey) == 0 || bytes.Compare(req.GetRowKey(), t.EndKey) < 0) {
			return proto.Clone(t).(*tabulapb.TabletInfo), nil
		}
	}
	return nil, status.Error(codes.Internal, "fake master: no tablet")
}

func (m *fakeMaster) LocateRange(ctx context.Context, req *tabulapb.LocateRangeRequest) (*tabulapb.LocateRangeResponse, error) {
	if err := m.enter(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, ok := m.tablets[req.GetTable()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "master: no table %q", req.GetTable())
	}
	resp := &tabulapb.LocateRangeResponse{}
	for _, t := range ts {
		endsBefore := len(t.EndKey) != 0 && bytes.Compare(t.EndKey, req.GetStartKey()) <= 0
		startsAfter := len(req.GetEndKey()) != 0 && bytes.Compare(t.StartKey, req.GetEndKey()) >= 0
		if !endsBefore && !startsAfter {
			resp.Tablets = append(resp.Tablets, proto.Clone(t).(*tabulapb.TabletInfo))
		}
	}
	return resp, nil
}

// deadAddress returns an address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func newLocator(t *testing.T, addrs ...string) *Locator {
	t.Helper()
	l, err := New(addrs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
