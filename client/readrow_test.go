package client

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A server that predates the unary ReadRow (the fake tablet server does
// not implement it) answers UNIMPLEMENTED: the read goes by ReadRows and
// gives the row, and the client reads from that server by stream, without
// asking ReadRow first, until unaryRetryAfter has passed.
func TestReadRowFallsBackToStreamsOnAServerWithoutReadRow(t *testing.T) {
	c := newCluster(t, 1)
	var mu sync.Mutex
	var calls []string
	record := func(method string) {
		if m, ok := strings.CutPrefix(method, "/tabula.v1.TabletServer/"); ok {
			mu.Lock()
			calls = append(calls, m)
			mu.Unlock()
		}
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := calls
		calls = nil
		return out
	}
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()}, DialOptions: []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			record(method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			record(method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	now := time.Unix(1000, 0)
	cl.streamOnly.now = func() time.Time { return now }
	tbl := cl.Open("t")
	if err := tbl.Apply(context.Background(), []byte("r"), NewMutation().Set("cf", []byte("q"), 1, []byte("v"))); err != nil {
		t.Fatal(err)
	}
	take()

	read := func(want []string) {
		t.Helper()
		row, err := tbl.ReadRow(context.Background(), []byte("r"))
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Cells) != 1 || string(row.Cells[0].Value) != "v" {
			t.Fatalf("ReadRow(r) = %v, want the cell v", row.Cells)
		}
		if got := take(); !slices.Equal(got, want) {
			t.Fatalf("tablet server calls %v, want %v", got, want)
		}
	}
	read([]string{"ReadRow", "ReadRows"})
	read([]string{"ReadRows"})
	now = now.Add(unaryRetryAfter - time.Second)
	read([]string{"ReadRows"})
	now = now.Add(time.Second)
	read([]string{"ReadRow", "ReadRows"})
}
