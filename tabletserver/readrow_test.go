package tabletserver

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/internal/testkit/fakemaster"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/rowfilter"
)

// tabletServerMethods is the prefix of the tablet server's gRPC methods.
const tabletServerMethods = "/tabula.v1.TabletServer/"

// methodLog records the tablet server methods a client calls.
type methodLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *methodLog) add(method string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, strings.TrimPrefix(method, tabletServerMethods))
}

// take returns the methods called since the last take.
func (l *methodLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// dialOptions make a client's connections record their tablet server
// calls in l.
func (l *methodLog) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if strings.HasPrefix(method, tabletServerMethods) {
				l.add(method)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if strings.HasPrefix(method, tabletServerMethods) {
				l.add(method)
			}
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// clientOf returns a client of the table the env's schema names, whose
// one tablet rec is on srv, found through a fake master; its calls to
// tablet servers are recorded in log.
func (e *env) clientOf(srv *Server, rec meta.TabletRecord, log *methodLog) *client.Table {
	e.t.Helper()
	m := fakemaster.Start(e.t)
	m.SetTablets(e.schema.Name, &tabulapb.TabletInfo{TabletId: rec.ID, StartKey: rec.Start, EndKey: rec.End,
		ServerId: srv.ID(), ServerAddress: srv.Addr(), Epoch: rec.Epoch, State: "assigned"})
	c, err := client.NewClientWithOptions(e.ctx, client.Options{Masters: []string{m.Addr()}, DialOptions: log.dialOptions()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c.Open(e.schema.Name)
}

// oneTablet starts a server holding one tablet of the whole table at
// epoch, and returns it with a client of the server.
func oneTablet(t *testing.T, epoch int64) (*env, *Server, meta.TabletRecord, *tabulapb.TabletRef, tabulapb.TabletServerClient) {
	t.Helper()
	e := newEnv(t)
	srv := e.start(nil)
	rec := e.assign("t1", nil, nil, srv, epoch)
	c := e.dial(srv)
	return e, srv, rec, e.load(c, rec), c
}

// A point read through the client is one unary ReadRow call: present
// rows, absent rows and filtered reads answer what a ReadRows stream
// answers, and no stream is opened.
func TestClientPointReadIsOneUnaryCall(t *testing.T) {
	e, srv, rec, ref, c := oneTablet(t, 1)
	if err := put(e.ctx, c, ref, "r1", set("cf", "a", 1, "x"), set("cf", "b", 1, "y")); err != nil {
		t.Fatal(err)
	}
	var log methodLog
	tbl := e.clientOf(srv, rec, &log)

	row, err := tbl.ReadRow(e.ctx, []byte("r1"))
	if err != nil {
		t.Fatal(err)
	}
	if string(row.Key) != "r1" || len(row.Cells) != 2 || string(row.Cells[0].Value) != "x" || string(row.Cells[1].Value) != "y" {
		t.Fatalf("ReadRow(r1) = %q %v, want cells a=x, b=y", row.Key, row.Cells)
	}
	row, err = tbl.ReadRow(e.ctx, []byte("r1"), client.WithFilter(rowfilter.QualifierRegex("b")))
	if err != nil {
		t.Fatal(err)
	}
	if len(row.Cells) != 1 || string(row.Cells[0].Value) != "y" {
		t.Fatalf("ReadRow(r1, qualifier b) = %v, want the cell b=y", row.Cells)
	}
	row, err = tbl.ReadRow(e.ctx, []byte("absent"))
	if err != nil {
		t.Fatal(err)
	}
	if string(row.Key) != "absent" || len(row.Cells) != 0 {
		t.Fatalf("ReadRow(absent) = %q %v, want the key and no cells", row.Key, row.Cells)
	}
	if got, want := log.take(), []string{"ReadRow", "ReadRow", "ReadRow"}; !slices.Equal(got, want) {
		t.Fatalf("tablet server calls %v, want %v", got, want)
	}
}

// A row larger than one ReadRows message is not sent by ReadRow: the
// server says too_large and the client reads it with ReadRows, in parts.
func TestClientPointReadOfALargeRowFallsBackToTheStream(t *testing.T) {
	e, srv, rec, ref, c := oneTablet(t, 1)
	big := string(bytes.Repeat([]byte("v"), readBatchBytes/2+1))
	if err := put(e.ctx, c, ref, "big", set("cf", "a", 1, big), set("cf", "b", 1, big)); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ReadRow(e.ctx, &tabulapb.ReadRowRequest{Tablet: ref, RowKey: []byte("big")})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.GetTooLarge() || resp.GetRow() != nil {
		t.Fatalf("ReadRow of a %d-byte row: too_large %v, row set %v; want too_large and no row", 2*len(big), resp.GetTooLarge(), resp.GetRow() != nil)
	}
	var log methodLog
	tbl := e.clientOf(srv, rec, &log)
	row, err := tbl.ReadRow(e.ctx, []byte("big"))
	if err != nil {
		t.Fatal(err)
	}
	if len(row.Cells) != 2 || string(row.Cells[0].Value) != big || string(row.Cells[1].Value) != big {
		t.Fatalf("ReadRow(big) = %d cells, want both large cells whole", len(row.Cells))
	}
	if got, want := log.take(), []string{"ReadRow", "ReadRows"}; !slices.Equal(got, want) {
		t.Fatalf("tablet server calls %v, want %v", got, want)
	}
}

// ReadRow refuses what ReadRows refuses: a stale epoch (NotServing, so
// that the client re-locates) and an invalid row key.
func TestReadRowRefusals(t *testing.T) {
	e, _, _, ref, c := oneTablet(t, 2)
	_, err := c.ReadRow(e.ctx, &tabulapb.ReadRowRequest{Tablet: &tabulapb.TabletRef{Table: ref.Table, TabletId: ref.TabletId, Epoch: 1}, RowKey: []byte("r")})
	wantNotServing(t, "ReadRow at a stale epoch", err, ref.Table, ref.TabletId)
	_, err = c.ReadRow(e.ctx, &tabulapb.ReadRowRequest{Tablet: ref})
	testkit.WantCode(t, "ReadRow of an empty row key", err, codes.InvalidArgument, "")
}
