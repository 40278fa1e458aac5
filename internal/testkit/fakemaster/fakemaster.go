// Package fakemaster is an in-memory master for tests of what routes by
// the master (the locator, the client): it serves tablet lookups from a
// tablet map the test sets, counts them, can hold them or answer like a
// standby, and answers scripted errors; it records the tables created and
// the row ranges dropped, and keeps enough of a schema for DescribeTable
// and ModifyFamily.
//
//	m := fakemaster.Start(t)
//	m.SetTablets("t", &tabulapb.TabletInfo{TabletId: "a", ServerAddress: addr, Epoch: 1, State: "assigned"})
//	l, err := locator.New([]string{m.Addr()}, locator.Options{})
//	…
//	if m.Lookups() != 1 { … }
//
// Part of internal/testkit: tests only.
package fakemaster

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit/rpctest"
)

// arrivals is how many lookups Arrived buffers; a lookup beyond them is
// not held up, only not announced.
const arrivals = 1000

// Master is the fake; its methods are safe for concurrent use.
type Master struct {
	tabulapb.UnimplementedMasterServer
	addr    string
	arrived chan struct{}

	// mu protects the fields below.
	mu          sync.Mutex
	tablets     map[string][]*tabulapb.TabletInfo // by table, sorted by start key
	lookups     int
	unavailable bool
	gate        chan struct{}
	faults      map[string][]error // by method
	created     []*tabulapb.CreateTableRequest
	dropped     []*tabulapb.DropRowRangeRequest
}

// Start serves a Master on a loopback port until the test ends.
func Start(t testing.TB) *Master {
	t.Helper()
	m := &Master{tablets: map[string][]*tabulapb.TabletInfo{}, faults: map[string][]error{}, arrived: make(chan struct{}, arrivals)}
	m.addr = rpctest.Serve(t, func(s *grpc.Server) { tabulapb.RegisterMasterServer(s, m) })
	return m
}

// Addr is the address the master listens on.
func (m *Master) Addr() string { return m.addr }

// SetTablets replaces table's tablets (sorted by start key); each one's
// Table is set to table. The master keeps the pointers: change them only
// through Update.
func (m *Master) SetTablets(table string, tablets ...*tabulapb.TabletInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range tablets {
		t.Table = table
	}
	m.tablets[table] = tablets
}

// Update replaces table's tablets by what fn makes of them, with the
// master's lock held: fn may change them in place (a move) or return
// others (a split), and must not call the master.
func (m *Master) Update(table string, fn func([]*tabulapb.TabletInfo) []*tabulapb.TabletInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tablets[table] = fn(m.tablets[table])
}

// Tablets returns copies of table's tablets.
func (m *Master) Tablets(table string) []*tabulapb.TabletInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tabletsLocked(table)
}

func (m *Master) tabletsLocked(table string) []*tabulapb.TabletInfo {
	out := make([]*tabulapb.TabletInfo, len(m.tablets[table]))
	for i, t := range m.tablets[table] {
		out[i] = proto.Clone(t).(*tabulapb.TabletInfo)
	}
	return out
}

// Lookups is how many LocateTablet and LocateRange calls arrived.
func (m *Master) Lookups() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookups
}

// Arrived receives once per lookup, as it arrives (before it waits for a
// gate).
func (m *Master) Arrived() <-chan struct{} { return m.arrived }

// SetUnavailable makes every call answer UNAVAILABLE, as a standby does,
// or stop doing so.
func (m *Master) SetUnavailable(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unavailable = on
}

// SetGate makes lookups wait until gate is closed (or their call is
// cancelled); nil lets them through at once.
func (m *Master) SetGate(gate chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gate = gate
}

// Fail scripts the next answers of method (its gRPC name, such as
// "DropRowRange"): each of its next calls answers the next of errs, in
// order, before it does anything else.
func (m *Master) Fail(method string, errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults[method] = append(m.faults[method], errs...)
}

// Created returns the CreateTable requests received, in order.
func (m *Master) Created() []*tabulapb.CreateTableRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*tabulapb.CreateTableRequest(nil), m.created...)
}

// Dropped returns the DropRowRange requests received and answered with
// success, in order.
func (m *Master) Dropped() []*tabulapb.DropRowRangeRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*tabulapb.DropRowRangeRequest(nil), m.dropped...)
}

// enter starts every call: it answers UNAVAILABLE for a standby, then a
// scripted error of method if there is one; a lookup is also counted,
// announced and held at the gate.
func (m *Master) enter(ctx context.Context, method string, lookup bool) error {
	m.mu.Lock()
	if lookup {
		m.lookups++
	}
	gate, unavailable := m.gate, m.unavailable
	var fault error
	if f := m.faults[method]; len(f) > 0 {
		fault, m.faults[method] = f[0], f[1:]
	}
	m.mu.Unlock()
	if lookup {
		select {
		case m.arrived <- struct{}{}:
		default:
		}
	}
	if unavailable {
		return status.Error(codes.Unavailable, "master: not the leader")
	}
	if fault != nil {
		return fault
	}
	if lookup && gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// contains reports whether row falls in the tablet's key range.
func contains(t *tabulapb.TabletInfo, row []byte) bool {
	return bytes.Compare(row, t.StartKey) >= 0 && (len(t.EndKey) == 0 || bytes.Compare(row, t.EndKey) < 0)
}
