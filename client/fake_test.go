package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
	"github.com/tabuladb/tabula/internal/testkit/rpctest"
	"github.com/tabuladb/tabula/locator"
	"github.com/tabuladb/tabula/rowfilter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file holds an in-memory twin of the tablet server, beside the
// fake master of internal/testkit/fakemaster: just enough of each to
// exercise the client's routing and retries.

// cluster is a fake master plus fake tablet servers sharing one store.
type cluster struct {
	master  *fakemaster.Master
	servers map[string]*fakeServer // by address
}

// fakeServer serves the tablets the test gives it, from a store of rows
// shared by the whole fake cluster (so moving a tablet keeps its data).
type fakeServer struct {
	tabulapb.UnimplementedTabletServerServer
	addr  string
	store *store
	// mu protects the fields below.
	mu    sync.Mutex
	held  map[string]int64 // tablet id → epoch
	calls map[string]int   // method → count
	// faults, per method, are errors returned (and consumed) before the
	// method does anything.
	faults map[string][]error
	// failAfter makes ReadRows fail with UNAVAILABLE after sending that
	// many rows (once).
	failAfter int
	// hang, when set, makes every data call block until it is closed or
	// the call is cancelled, like a paused server.
	hang chan struct{}
	// hungCalls receives (without blocking) once per call that hang
	// holds.
	hungCalls chan struct{}
	// stallAfter makes ReadRows stop answering (until cancelled) after
	// sending that many rows (once).
	stallAfter int
	// partBudget, when set, sends rows larger than it in parts, as the
	// real server does with rows larger than a message.
	partBudget int
	// reads records every ReadRows request that reached the store.
	reads []*tabulapb.ReadRowsRequest
}

// hangIfPaused blocks while the server is "paused" (see hang).
func (s *fakeServer) hangIfPaused(ctx context.Context) error {
	s.mu.Lock()
	hang := s.hang
	s.mu.Unlock()
	if hang == nil {
		return nil
	}
	s.mu.Lock()
	s.calls["hung"]++
	s.mu.Unlock()
	select {
	case s.hungCalls <- struct{}{}:
	default:
	}
	select {
	case <-hang:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

type store struct {
	mu   sync.Mutex
	rows map[string][]cell.Cell
	// families known to the table
	families map[string]bool
}

// newCluster starts a master and n servers; table "t" has one tablet per
// split range, assigned round-robin.
func newCluster(t *testing.T, n int, splits ...string) *cluster {
	t.Helper()
	st := &store{rows: map[string][]cell.Cell{}, families: map[string]bool{"cf": true, "cg": true}}
	c := &cluster{servers: map[string]*fakeServer{}}
	var addrs []string
	for i := 0; i < n; i++ {
		s := &fakeServer{store: st, held: map[string]int64{}, calls: map[string]int{}, faults: map[string][]error{},
			hungCalls: make(chan struct{}, 100)}
		s.addr = rpctest.Serve(t, func(g *grpc.Server) { tabulapb.RegisterTabletServerServer(g, s) })
		c.servers[s.addr] = s
		addrs = append(addrs, s.addr)
	}
	c.master = fakemaster.Start(t)
	var tablets []*tabulapb.TabletInfo
	bounds := append([]string{""}, splits...)
	for i, start := range bounds {
		end := ""
		if i+1 < len(bounds) {
			end = bounds[i+1]
		}
		addr := addrs[i%n]
		id := "tab" + start
		tablets = append(tablets, &tabulapb.TabletInfo{Table: "t", TabletId: id, StartKey: []byte(start),
			EndKey: []byte(end), ServerId: addr, ServerAddress: addr, Epoch: 1, State: "assigned"})
		c.servers[addr].held[id] = 1
	}
	c.master.SetTablets("t", tablets...)
	return c
}

// move reassigns the tablet holding row to the server at addr with a new
// epoch, as the master would.
func (c *cluster) move(row, addr string) {
	c.master.Update("t", func(tablets []*tabulapb.TabletInfo) []*tabulapb.TabletInfo {
		for _, tab := range tablets {
			if contains(tab, []byte(row)) {
				old := c.servers[tab.ServerAddress]
				old.mu.Lock()
				delete(old.held, tab.TabletId)
				old.mu.Unlock()
				tab.Epoch++
				tab.ServerAddress, tab.ServerId = addr, addr
				s := c.servers[addr]
				s.mu.Lock()
				s.held[tab.TabletId] = tab.Epoch
				s.mu.Unlock()
				break
			}
		}
		return tablets
	})
}

func (c *cluster) client(t *testing.T) *Client {
	t.Helper()
	cl, err := NewClient(context.Background(), c.master.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func contains(tab *tabulapb.TabletInfo, row []byte) bool {
	return bytes.Compare(row, tab.StartKey) >= 0 && (len(tab.EndKey) == 0 || bytes.Compare(row, tab.EndKey) < 0)
}

func (s *fakeServer) inject(method string, errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], errs...)
}

func (s *fakeServer) callCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

func notServing(ref *tabulapb.TabletRef, row []byte) error {
	st, err := status.New(codes.FailedPrecondition, "tabletserver: not serving tablet "+ref.GetTabletId()).
		WithDetails(&tabulapb.NotServing{Table: ref.GetTable(), TabletId: ref.GetTabletId(), RowKey: row, Reason: "not held"})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// enter counts a call, returns an injected fault if any, then checks the
// tablet reference.
func (s *fakeServer) enter(method string, ref *tabulapb.TabletRef, row []byte) error {
	s.mu.Lock()
	s.calls[method]++
	if f := s.faults[method]; len(f) > 0 {
		s.faults[method] = f[1:]
		s.mu.Unlock()
		return f[0]
	}
	epoch, ok := s.held[ref.GetTabletId()]
	s.mu.Unlock()
	if !ok || epoch != ref.GetEpoch() {
		return notServing(ref, row)
	}
	return nil
}

func (st *store) apply(row []byte, muts []cell.Mutation) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, m := range muts {
		if m.Kind != cell.DeleteRow && !st.families[m.Family] {
			return status.Errorf(codes.NotFound, "tablet: unknown family %q", m.Family)
		}
	}
	cells := st.rows[string(row)]
	for _, m := range muts {
		switch m.Kind {
		case cell.SetCell:
			ts := m.Timestamp
			if ts == cell.ServerTimestamp {
				ts = int64(len(cells) + 1000)
			}
			kept := cells[:0:0]
			for _, c := range cells {
				if !(c.Family == m.Family && bytes.Equal(c.Qualifier, m.Qualifier) && c.Timestamp == ts) {
					kept = append(kept, c)
				}
			}
			cells = append(kept, cell.Cell{Row: row, Family: m.Family, Qualifier: m.Qualifier, Timestamp: ts, Value: m.Value})
		case cell.DeleteRow:
			cells = nil
		case cell.DeleteFamily, cell.DeleteColumn:
			kept := cells[:0:0]
			for _, c := range cells {
				if c.Family == m.Family && (m.Kind == cell.DeleteFamily || bytes.Equal(c.Qualifier, m.Qualifier)) {
					continue
				}
				kept = append(kept, c)
			}
			cells = kept
		}
	}
	sort.Slice(cells, func(i, j int) bool { return cell.Compare(&cells[i], &cells[j]) < 0 })
	if len(cells) == 0 {
		delete(st.rows, string(row))
	} else {
		st.rows[string(row)] = cells
	}
	return nil
}

func (st *store) read(row []byte) []cell.Cell {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]cell.Cell(nil), st.rows[string(row)]...)
}

func (s *fakeServer) MutateRow(ctx context.Context, req *tabulapb.MutateRowRequest) (*tabulapb.MutateRowResponse, error) {
	if err := s.hangIfPaused(ctx); err != nil {
		return nil, err
	}
	if err := s.enter("MutateRow", req.GetTablet(), req.GetRowKey()); err != nil {
		return nil, err
	}
	muts, err := convert.MutationsFromProto(req.GetMutations())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &tabulapb.MutateRowResponse{}, s.store.apply(req.GetRowKey(), muts)
}

func (s *fakeServer) MutateRows(ctx context.Context, req *tabulapb.MutateRowsRequest) (*tabulapb.MutateRowsResponse, error) {
	if err := s.hangIfPaused(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.calls["MutateRows"]++
	s.mu.Unlock()
	resp := &tabulapb.MutateRowsResponse{}
	for i, e := range req.GetEntries() {
		err := s.enter("MutateRows.entry", e.GetTablet(), e.GetRowKey())
		if err == nil {
			var muts []cell.Mutation
			if muts, err = convert.MutationsFromProto(e.GetMutations()); err == nil {
				err = s.store.apply(e.GetRowKey(), muts)
			}
		}
		pe := &tabulapb.MutateRowsResponse_Entry{Index: int64(i)}
		if err != nil {
			st := status.Convert(err)
			pe.Code, pe.Message = int32(st.Code()), st.Message()
			for _, d := range st.Details() {
				if ns, ok := d.(*tabulapb.NotServing); ok {
					pe.NotServing = ns
				}
			}
		}
		resp.Entries = append(resp.Entries, pe)
	}
	return resp, nil
}

func (s *fakeServer) ReadRows(req *tabulapb.ReadRowsRequest, stream tabulapb.TabletServer_ReadRowsServer) error {
	if err := s.hangIfPaused(stream.Context()); err != nil {
		return err
	}
	if err := s.enter("ReadRows", req.GetTablet(), nil); err != nil {
		return err
	}
	s.mu.Lock()
	failAfter, stallAfter, partBudget := s.failAfter, s.stallAfter, s.partBudget
	s.failAfter, s.stallAfter = 0, 0
	s.reads = append(s.reads, req)
	s.mu.Unlock()
	f, err := convert.FilterFromProto(req.GetFilter())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	cf, err := rowfilter.Compile(f)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	s.store.mu.Lock()
	var keys []string
	for k := range s.store.rows {
		if inSet(req.GetRows(), []byte(k)) {
			keys = append(keys, k)
		}
	}
	s.store.mu.Unlock()
	sort.Strings(keys)
	if req.GetReversed() {
		slices.Reverse(keys)
	}
	var batch []*tabulapb.Row
	sent := int64(0)
	for _, k := range keys {
		cells := cf.Apply([]byte(k), s.store.read([]byte(k)))
		if len(cells) == 0 {
			continue
		}
		if stallAfter > 0 && sent == int64(stallAfter) {
			if len(batch) > 0 {
				stream.Send(&tabulapb.ReadRowsResponse{Rows: batch})
			}
			<-stream.Context().Done()
			return stream.Context().Err()
		}
		if failAfter > 0 && sent == int64(failAfter) {
			if len(batch) > 0 {
				stream.Send(&tabulapb.ReadRowsResponse{Rows: batch})
			}
			return status.Error(codes.Unavailable, "fake: stream broke")
		}
		if partBudget > 0 {
			batch = append(batch, convert.SplitRow(convert.CellsToProtoRow([]byte(k), cells), partBudget)...)
		} else {
			batch = append(batch, convert.CellsToProtoRow([]byte(k), cells))
		}
		sent++
		if len(batch) == 2 {
			if err := stream.Send(&tabulapb.ReadRowsResponse{Rows: batch}); err != nil {
				return err
			}
			batch = nil
		}
		if req.GetRowsLimit() > 0 && sent >= req.GetRowsLimit() {
			break
		}
	}
	if len(batch) > 0 {
		return stream.Send(&tabulapb.ReadRowsResponse{Rows: batch})
	}
	return nil
}

func inSet(rs *tabulapb.RowSet, k []byte) bool {
	for _, key := range rs.GetRowKeys() {
		if bytes.Equal(key, k) {
			return true
		}
	}
	for _, r := range rs.GetRowRanges() {
		if bytes.Compare(k, r.GetStartKey()) >= 0 && (len(r.GetEndKey()) == 0 || bytes.Compare(k, r.GetEndKey()) < 0) {
			return true
		}
	}
	return false
}

func (s *fakeServer) CheckAndMutateRow(ctx context.Context, req *tabulapb.CheckAndMutateRowRequest) (*tabulapb.CheckAndMutateRowResponse, error) {
	if err := s.hangIfPaused(ctx); err != nil {
		return nil, err
	}
	if err := s.enter("CheckAndMutateRow", req.GetTablet(), req.GetRowKey()); err != nil {
		return nil, err
	}
	f, err := convert.FilterFromProto(req.GetPredicateFilter())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	cf, err := rowfilter.Compile(f)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	matched := len(cf.Apply(req.GetRowKey(), s.store.read(req.GetRowKey()))) > 0
	pm := req.GetFalseMutations()
	if matched {
		pm = req.GetTrueMutations()
	}
	muts, err := convert.MutationsFromProto(pm)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.store.apply(req.GetRowKey(), muts); err != nil {
		return nil, err
	}
	return &tabulapb.CheckAndMutateRowResponse{PredicateMatched: matched}, nil
}

func (s *fakeServer) ReadModifyWriteRow(ctx context.Context, req *tabulapb.ReadModifyWriteRowRequest) (*tabulapb.ReadModifyWriteRowResponse, error) {
	if err := s.hangIfPaused(ctx); err != nil {
		return nil, err
	}
	if err := s.enter("ReadModifyWriteRow", req.GetTablet(), req.GetRowKey()); err != nil {
		return nil, err
	}
	rules, err := convert.RulesFromProto(req.GetRules())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	var out []cell.Cell
	for _, r := range rules {
		var old []byte
		for _, c := range s.store.read(req.GetRowKey()) {
			if c.Family == r.Family && bytes.Equal(c.Qualifier, r.Qualifier) {
				old = c.Value
				break
			}
		}
		var v []byte
		if r.Kind == cell.Increment {
			var n int64
			if len(old) == 8 {
				n = int64(binary.BigEndian.Uint64(old))
			}
			v = binary.BigEndian.AppendUint64(nil, uint64(n+r.IncrementAmount))
		} else {
			v = append(append([]byte(nil), old...), r.AppendValue...)
		}
		m := cell.Mutation{Kind: cell.SetCell, Family: r.Family, Qualifier: r.Qualifier, Timestamp: 5000, Value: v}
		if err := s.store.apply(req.GetRowKey(), []cell.Mutation{m}); err != nil {
			return nil, err
		}
		out = append(out, cell.Cell{Family: r.Family, Qualifier: r.Qualifier, Timestamp: 5000, Value: v})
	}
	return &tabulapb.ReadModifyWriteRowResponse{Row: convert.CellsToProtoRow(req.GetRowKey(), out)}, nil
}

func (s *fakeServer) SampleRowKeys(ctx context.Context, req *tabulapb.SampleRowKeysRequest) (*tabulapb.SampleRowKeysResponse, error) {
	if err := s.hangIfPaused(ctx); err != nil {
		return nil, err
	}
	if err := s.enter("SampleRowKeys", req.GetTablet(), nil); err != nil {
		return nil, err
	}
	return &tabulapb.SampleRowKeysResponse{Samples: []*tabulapb.SampleRowKeysResponse_Sample{
		{RowKey: []byte(req.GetTablet().GetTabletId()), OffsetBytes: 100 + req.GetTargetBytes()}}}, nil
}

// split replaces the tablet holding at with two children split at at,
// served by the given servers at epoch parent+1, as a split commit would.
func (c *cluster) split(at, leftAddr, rightAddr string) {
	c.master.Update("t", func(tablets []*tabulapb.TabletInfo) []*tabulapb.TabletInfo {
		for i, p := range tablets {
			if !contains(p, []byte(at)) {
				continue
			}
			old := c.servers[p.ServerAddress]
			old.mu.Lock()
			delete(old.held, p.TabletId)
			old.mu.Unlock()
			left := &tabulapb.TabletInfo{Table: "t", TabletId: p.TabletId + "L", StartKey: p.StartKey, EndKey: []byte(at),
				ServerId: leftAddr, ServerAddress: leftAddr, Epoch: p.Epoch + 1, State: "assigned"}
			right := &tabulapb.TabletInfo{Table: "t", TabletId: p.TabletId + "R", StartKey: []byte(at), EndKey: p.EndKey,
				ServerId: rightAddr, ServerAddress: rightAddr, Epoch: p.Epoch + 1, State: "assigned"}
			for _, ch := range []*tabulapb.TabletInfo{left, right} {
				s := c.servers[ch.ServerAddress]
				s.mu.Lock()
				s.held[ch.TabletId] = ch.Epoch
				s.mu.Unlock()
			}
			return append(tablets[:i], append([]*tabulapb.TabletInfo{left, right}, tablets[i+1:]...)...)
		}
		return tablets
	})
}

func locatorBackoff(d time.Duration) locator.Backoff { return locator.Backoff{Initial: d, Max: 4 * d} }
