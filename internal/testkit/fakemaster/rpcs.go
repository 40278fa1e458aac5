package fakemaster

import (
	"bytes"
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// The master's calls the fake answers; the rest are unimplemented.

// LocateTablet answers the tablet holding the row, from the tablet map.
func (m *Master) LocateTablet(ctx context.Context, req *tabulapb.LocateTabletRequest) (*tabulapb.TabletInfo, error) {
	ts, err := m.lookup(ctx, "LocateTablet", req.GetTable())
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if contains(t, req.GetRowKey()) {
			return t, nil
		}
	}
	return nil, status.Error(codes.Internal, "fake master: no tablet")
}

// LocateRange answers the tablets overlapping [start, end).
func (m *Master) LocateRange(ctx context.Context, req *tabulapb.LocateRangeRequest) (*tabulapb.LocateRangeResponse, error) {
	ts, err := m.lookup(ctx, "LocateRange", req.GetTable())
	if err != nil {
		return nil, err
	}
	resp := &tabulapb.LocateRangeResponse{}
	for _, t := range ts {
		endsBefore := len(t.EndKey) != 0 && bytes.Compare(t.EndKey, req.GetStartKey()) <= 0
		startsAfter := len(req.GetEndKey()) != 0 && bytes.Compare(t.StartKey, req.GetEndKey()) >= 0
		if !endsBefore && !startsAfter {
			resp.Tablets = append(resp.Tablets, t)
		}
	}
	return resp, nil
}

// lookup starts a lookup (see enter) and returns copies of table's
// tablets, or NOT_FOUND.
func (m *Master) lookup(ctx context.Context, method, table string) ([]*tabulapb.TabletInfo, error) {
	if err := m.enter(ctx, method, true); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tablets[table]; !ok {
		return nil, status.Errorf(codes.NotFound, "master: no table %q", table)
	}
	return m.tabletsLocked(table), nil
}

// ListServers answers no servers.
func (m *Master) ListServers(ctx context.Context, _ *tabulapb.ListServersRequest) (*tabulapb.ListServersResponse, error) {
	if err := m.enter(ctx, "ListServers", false); err != nil {
		return nil, err
	}
	return &tabulapb.ListServersResponse{}, nil
}

// WhoAmI answers a client's probe: no authentication.
func (m *Master) WhoAmI(ctx context.Context, _ *tabulapb.WhoAmIRequest) (*tabulapb.WhoAmIResponse, error) {
	if err := m.enter(ctx, "WhoAmI", false); err != nil {
		return nil, err
	}
	return &tabulapb.WhoAmIResponse{Method: "none"}, nil
}

// CreateTable records the request and answers its schema; it adds no
// tablets.
func (m *Master) CreateTable(ctx context.Context, req *tabulapb.CreateTableRequest) (*tabulapb.TableSchema, error) {
	if err := m.enter(ctx, "CreateTable", false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.created = append(m.created, req)
	return req.GetSchema(), nil
}

// DescribeTable answers the schema of the last table created by that
// name, as ModifyFamily left it.
func (m *Master) DescribeTable(ctx context.Context, req *tabulapb.DescribeTableRequest) (*tabulapb.DescribeTableResponse, error) {
	if err := m.enter(ctx, "DescribeTable", false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.created) - 1; i >= 0; i-- {
		if s := m.created[i].GetSchema(); s.GetName() == req.GetTable() {
			return &tabulapb.DescribeTableResponse{Schema: s}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "master: no table %q", req.GetTable())
}

// ModifyFamily replaces a family of the last table created by that name.
func (m *Master) ModifyFamily(ctx context.Context, req *tabulapb.FamilyRequest) (*tabulapb.TableSchema, error) {
	if err := m.enter(ctx, "ModifyFamily", false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.created) - 1; i >= 0; i-- {
		if s := m.created[i].GetSchema(); s.GetName() == req.GetTable() {
			for j, f := range s.GetFamilies() {
				if f.GetName() == req.GetFamily().GetName() {
					s.Families[j] = req.GetFamily()
					return s, nil
				}
			}
		}
	}
	return nil, status.Errorf(codes.NotFound, "master: no family %s in %q", req.GetFamily().GetName(), req.GetTable())
}

// DropRowRange records the request.
func (m *Master) DropRowRange(ctx context.Context, req *tabulapb.DropRowRangeRequest) (*tabulapb.DropRowRangeResponse, error) {
	if err := m.enter(ctx, "DropRowRange", false); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropped = append(m.dropped, proto.Clone(req).(*tabulapb.DropRowRangeRequest))
	return &tabulapb.DropRowRangeResponse{}, nil
}
