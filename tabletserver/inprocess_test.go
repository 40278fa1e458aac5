package tabletserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/auth"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/tlsconf"
)

// localClient returns an in-process client of srv (LocalConn), plaintext
// and without a token.
func localClient(t *testing.T, srv *Server) tabulapb.TabletServerClient {
	t.Helper()
	conn, err := srv.LocalConn(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return tabulapb.NewTabletServerClient(conn)
}

// A cancelled in-process ReadRows ends its handler with CANCELED, even
// while the handler is blocked sending to a reader that stopped reading:
// the caller's cancellation reaches the handler's context. (Without the
// relay the handler stays blocked until ScanStallTimeout, an hour here.)
func TestInProcessReadRowsCancelStopsTheHandler(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.ScanStallTimeout, o.LeaseTTL = time.Hour, 10*time.Second })
	c := localClient(t, srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	// More than the stream's buffer (localStreamBuffer batches of 1 MiB).
	const rows = 128
	big := strings.Repeat("v", 64<<10)
	for i := range rows {
		if err := put(e.ctx, c, ref, fmt.Sprintf("r%03d", i), set("cf", "q", 1, big)); err != nil {
			t.Fatal(err)
		}
	}
	ended := make(chan error, 1)
	srv.stream = append(srv.stream, func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		err := handler(srv, ss)
		ended <- err
		return err
	})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	stream, err := c.ReadRows(ctx, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-ended:
		testkit.WantCode(t, "the handler of the cancelled scan", err, codes.Canceled, "")
	case <-e.ctx.Done():
		t.Fatal("the handler of a cancelled in-process ReadRows did not return")
	}
	_, err = stream.Recv()
	testkit.WantCode(t, "Recv after cancel", err, codes.Canceled, "")
	if got, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref}); err != nil || len(got) != rows {
		t.Fatalf("a scan after the cancelled one: %d rows, %v", len(got), err)
	}
}

// The caller's deadline is the handler's; a call past it fails with
// DEADLINE_EXCEEDED without reaching the handler.
func TestInProcessDeadlineReachesTheHandler(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := localClient(t, srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	var got time.Time
	var had bool
	srv.unary = append(srv.unary, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		got, had = ctx.Deadline()
		return handler(ctx, req)
	})
	want := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	if err := put(ctx, c, ref, "r", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if !had || !got.Equal(want) {
		t.Errorf("handler's deadline = %v (set %v), want %v", got, had, want)
	}
	past, cancel2 := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	testkit.WantCode(t, "a call past its deadline", put(past, c, ref, "r", set("cf", "q", 2, "v")), codes.DeadlineExceeded, "")
}

// Neither side sees the other's later changes to a message: the caller's
// request buffer rewritten after MutateRow, and a response the handler
// rewrites after Send (as a server reusing its batch messages would), do
// not change what the other side holds.
func TestInProcessMessagesAreNotShared(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := localClient(t, srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	value := []byte("original")
	req := &tabulapb.MutateRowRequest{Tablet: ref, RowKey: []byte("row"), Mutations: []*tabulapb.Mutation{{
		Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{Family: "cf", Qualifier: []byte("q"), TimestampMicros: 1, Value: value}}}}}
	srv.unary = append(srv.unary, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		for _, m := range req.(*tabulapb.MutateRowRequest).GetMutations() {
			copy(m.GetSetCell().GetValue(), "SERVER!!")
		}
		return resp, err
	})
	if _, err := c.MutateRow(e.ctx, req); err != nil {
		t.Fatal(err)
	}
	if string(value) != "original" {
		t.Fatalf("the caller's request value is %q after the handler rewrote its own: shared", value)
	}
	copy(value, "CHANGED!")
	req.RowKey[0] = 'X'
	srv.stream = append(srv.stream, func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &scribblingStream{ServerStream: ss})
	})
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || string(rows[0].Key) != "row" || len(rows[0].Cells) != 1 ||
		string(rows[0].Cells[0].Value) != "original" {
		t.Fatalf("rows read = %v, want row with cf:q = original", rows)
	}
}

// scribblingStream rewrites every response after sending it. A message
// of encoded rows (convert.RowsMessage) gives its bytes up when sent, so
// there is nothing left of it to rewrite; a sent one that still held
// them would be shared, and is rewritten.
type scribblingStream struct{ grpc.ServerStream }

func (s *scribblingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if rm, ok := m.(*convert.RowsMessage); ok {
		b := rm.Encoded()
		for i := range b {
			b[i] = 'X'
		}
		return err
	}
	for _, r := range m.(*tabulapb.ReadRowsResponse).GetRows() {
		copy(r.Key, "XXXX")
		for _, cl := range r.Cells {
			copy(cl.Value, "SCRIBBLE")
		}
	}
	return err
}

// On a TLS server the in-process caller is who its TLS configuration
// says, as after a handshake: its certificate, verified against the
// server's CA, names it to the guard; a plaintext caller, and a
// certificate from another CA, are refused as a handshake would be.
func TestInProcessIdentityIsTheCallersCertificate(t *testing.T) {
	pki, err := tlsconf.GenerateDev(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := tlsconf.ServerConfig(pki.TabletServer)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.ServerTLS = serverTLS })
	var who auth.Identity
	srv.unary = append(srv.unary, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		who = auth.IdentityFrom(ctx)
		return handler(ctx, req)
	})
	master, err := tlsconf.ClientConfig(pki.Master)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := srv.LocalConn(master, "")
	if err != nil {
		t.Fatal(err)
	}
	c := tabulapb.NewTabletServerClient(conn)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1)) // master-only: needs the master's certificate
	if who.Name != auth.MasterName || who.Method != auth.ByCertificate {
		t.Errorf("identity = %+v, want %s by certificate", who, auth.MasterName)
	}
	if err := put(e.ctx, c, ref, "r", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}

	anon, err := srv.LocalConn(&tls.Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tabulapb.NewTabletServerClient(anon).LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{})
	testkit.WantCode(t, "LoadTablet without the master's certificate", err, codes.Unauthenticated, "")

	if _, err := srv.LocalConn(nil, ""); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext caller of a TLS server: %v, want UNAVAILABLE", err)
	}
	other, err := tlsconf.GenerateDev(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tlsconf.ClientConfig(other.Master)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.LocalConn(stranger, ""); status.Code(err) != codes.Unavailable {
		t.Errorf("a certificate of another CA: %v, want UNAVAILABLE", err)
	}
}

// Close refuses in-process calls once it has drained those in flight, as
// gRPC's graceful stop refuses new streams.
func TestInProcessCallsAfterCloseAreRefused(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := localClient(t, srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WantCode(t, "a call after Close", put(e.ctx, c, ref, "r", set("cf", "q", 1, "v")), codes.Unavailable, "")
}

// The hand-written copy of ReadRowsResponse equals proto.Clone's, shares
// no memory with the original, and knows every field: a field added to
// ReadRowsResponse, Row or Cell fails this test until the copy (and the
// counts here) take it.
func TestCloneReadRowsResponseCoversEveryField(t *testing.T) {
	for msg, fields := range map[proto.Message]int{&tabulapb.ReadRowsResponse{}: 1, &tabulapb.Row{}: 3, &tabulapb.Cell{}: 6} {
		if got := msg.ProtoReflect().Descriptor().Fields().Len(); got != fields {
			t.Errorf("%s has %d fields; cloneReadRowsResponse copies %d: teach it the new ones", msg.ProtoReflect().Descriptor().FullName(), got, fields)
		}
	}
	m := &tabulapb.ReadRowsResponse{Rows: []*tabulapb.Row{
		{Key: []byte("a"), Cells: []*tabulapb.Cell{
			{Family: "cf", Qualifier: []byte("q1"), TimestampMicros: 7, Value: []byte("v1"), Labels: []string{"l"}},
			{Family: "cf", Qualifier: []byte{}, TimestampMicros: 6, Value: []byte("piece"), ValueContinues: true},
		}, Continued: true},
		{Key: []byte("b")},
	}}
	c, ok := cloneReadRowsResponse(m)
	if !ok || !proto.Equal(c, m) {
		t.Fatalf("clone = %v, %v; want %v", c, ok, m)
	}
	want := proto.Clone(m)
	copy(m.Rows[0].Key, "X")
	copy(m.Rows[0].Cells[0].Qualifier, "XX")
	copy(m.Rows[0].Cells[0].Value, "XX")
	m.Rows[0].Cells[0].Labels[0] = "X"
	if !proto.Equal(c, want) {
		t.Errorf("the clone changed with the original: %v", c)
	}
	unknown := proto.Clone(want).(*tabulapb.ReadRowsResponse)
	unknown.Rows[1].ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
	if _, ok := cloneReadRowsResponse(unknown); ok {
		t.Error("a message with unknown fields was copied by hand; only proto.Clone keeps them")
	}
	if got := cloneMessage(unknown); !proto.Equal(got, unknown) {
		t.Errorf("cloneMessage of a message with unknown fields = %v", got)
	}
}

// The hand copies of the write messages and of a point read's answer
// (copyInto) copy every field, share
// no byte with the original, and leave what they do not know (unknown
// fields, an aggregate mutation) to proto.Merge, which copies it too.
func TestCloneMutationsCoversEveryField(t *testing.T) {
	for msg, fields := range map[proto.Message]int{
		&tabulapb.MutateRowsRequest{}: 1, &tabulapb.MutateRowsRequest_Entry{}: 3, &tabulapb.MutateRowRequest{}: 3,
		&tabulapb.TabletRef{}: 3, &tabulapb.Mutation{}: 6, &tabulapb.Mutation_SetCell{}: 4,
		&tabulapb.Mutation_DeleteFromColumn{}: 4, &tabulapb.Mutation_DeleteFromFamily{}: 1, &tabulapb.Mutation_DeleteFromRow{}: 0,
		&tabulapb.MutateRowsResponse{}: 1, &tabulapb.MutateRowsResponse_Entry{}: 4, &tabulapb.NotServing{}: 4,
		&tabulapb.ReadRowResponse{}: 2,
	} {
		if got := msg.ProtoReflect().Descriptor().Fields().Len(); got != fields {
			t.Errorf("%s has %d fields; copyInto copies %d: teach it the new ones", msg.ProtoReflect().Descriptor().FullName(), got, fields)
		}
	}
	muts := func() []*tabulapb.Mutation {
		return []*tabulapb.Mutation{
			{Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{Family: "cf", Qualifier: []byte("q"), TimestampMicros: 7, Value: []byte("value")}}},
			{Mutation: &tabulapb.Mutation_SetCell_{SetCell: &tabulapb.Mutation_SetCell{Family: "cf", Qualifier: []byte{}, TimestampMicros: -1}}},
			{Mutation: &tabulapb.Mutation_DeleteFromColumn_{DeleteFromColumn: &tabulapb.Mutation_DeleteFromColumn{Family: "cf", Qualifier: []byte("d"), StartTimestampMicros: 1, EndTimestampMicros: 9}}},
			{Mutation: &tabulapb.Mutation_DeleteFromFamily_{DeleteFromFamily: &tabulapb.Mutation_DeleteFromFamily{Family: "old"}}},
			{Mutation: &tabulapb.Mutation_DeleteFromRow_{DeleteFromRow: &tabulapb.Mutation_DeleteFromRow{}}},
		}
	}
	ref := &tabulapb.TabletRef{Table: "t", TabletId: "t1", Epoch: 3}
	rows := &tabulapb.MutateRowsRequest{Entries: []*tabulapb.MutateRowsRequest_Entry{
		{Tablet: ref, RowKey: []byte("a"), Mutations: muts()},
		{RowKey: []byte("b"), Mutations: muts()[:1]},
		{Tablet: ref},
	}}
	row := &tabulapb.MutateRowRequest{Tablet: ref, RowKey: []byte("r"), Mutations: muts()}
	resp := &tabulapb.MutateRowsResponse{Entries: []*tabulapb.MutateRowsResponse_Entry{
		{Index: 0},
		{Index: 1, Code: int32(codes.FailedPrecondition), Message: "moved", NotServing: &tabulapb.NotServing{Table: "t", TabletId: "t1", RowKey: []byte("b"), Reason: "gone"}},
	}}
	// scribble rewrites every byte field of m in place.
	scribble := func(m proto.Message) {
		var walk func(protoreflect.Message)
		walk = func(m protoreflect.Message) {
			m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
				switch {
				case fd.IsList() && fd.Message() != nil:
					for i := 0; i < v.List().Len(); i++ {
						walk(v.List().Get(i).Message())
					}
				case fd.Message() != nil:
					walk(v.Message())
				case fd.Kind() == protoreflect.BytesKind:
					b := v.Bytes()
					for i := range b {
						b[i] = 'X'
					}
				}
				return true
			})
		}
		walk(m.ProtoReflect())
	}
	read := &tabulapb.ReadRowResponse{Row: &tabulapb.Row{Key: []byte("r"), Cells: []*tabulapb.Cell{
		{Family: "cf", Qualifier: []byte("q"), TimestampMicros: 7, Value: []byte("v"), Labels: []string{"l"}}}}}
	for _, m := range []proto.Message{rows, row, resp, read, &tabulapb.ReadRowResponse{TooLarge: true}} {
		name := m.ProtoReflect().Descriptor().FullName()
		for _, unknown := range []bool{false, true} {
			orig := proto.Clone(m)
			if unknown {
				orig.ProtoReflect().SetUnknown([]byte{0xf8, 0x01, 0x01}) // field 31, varint 1
			}
			c := orig.ProtoReflect().New().Interface()
			copyInto(c, orig)
			if !proto.Equal(c, orig) {
				t.Fatalf("%s (unknown fields %v): copy = %v, want %v", name, unknown, c, orig)
			}
			want := proto.Clone(orig)
			scribble(orig)
			if !proto.Equal(c, want) {
				t.Errorf("%s (unknown fields %v): the copy changed with the original: %v", name, unknown, c)
			}
		}
	}
	if _, ok := cloneMutateRowsEntries(rows); !ok {
		t.Error("cloneMutateRowsEntries refused a request of set and delete mutations")
	}
	add := proto.Clone(rows).(*tabulapb.MutateRowsRequest)
	add.Entries[1].Mutations = append(add.Entries[1].Mutations, &tabulapb.Mutation{Mutation: &tabulapb.Mutation_AddToCell_{AddToCell: &tabulapb.Mutation_AddToCell{Family: "sum", Qualifier: []byte("n"), Input: 2}}})
	if _, ok := cloneMutateRowsEntries(add); ok {
		t.Error("cloneMutateRowsEntries copied an AddToCell by hand; it does not know its fields")
	}
	c := &tabulapb.MutateRowsRequest{}
	copyInto(c, add)
	if !proto.Equal(c, add) {
		t.Errorf("copyInto of a request with an AddToCell = %v, want %v", c, add)
	}
}
