package client

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The attempt bound (AttemptTimeout) is the client's own timer, not a
// deadline: a call whose context has none reaches gRPC without one, so
// that no grpc-timeout is sent and timed on either side. (That a hung
// attempt still ends is hang_test.go's.)
func TestAttemptsSendNoDeadline(t *testing.T) {
	c := newCluster(t, 1)
	var mu sync.Mutex
	deadlines := map[string]bool{} // method → whether a call of it had a deadline
	cl, err := NewClientWithOptions(context.Background(), Options{Masters: []string{c.master.Addr()}, DialOptions: []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			_, ok := ctx.Deadline()
			mu.Lock()
			deadlines[method] = deadlines[method] || ok
			mu.Unlock()
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	tbl := cl.Open("t")
	if err := tbl.Apply(context.Background(), []byte("r"), NewMutation().Set("cf", []byte("q"), 1, []byte("v"))); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	const method = "/tabula.v1.TabletServer/MutateRow"
	if had, called := deadlines[method]; !called || had {
		t.Fatalf("MutateRow called %v, with a deadline %v; want called without one", called, had)
	}
}
