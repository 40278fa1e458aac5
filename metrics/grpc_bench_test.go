package metrics

import (
	"context"
	"testing"

	"google.golang.org/grpc"
)

// BenchmarkUnaryInterceptor is the data path's cost of metrics per call:
// the method lookup, a counter add and a histogram observe (compare with
// the bare handler, BenchmarkUnaryNoInterceptor).
func BenchmarkUnaryInterceptor(b *testing.B) {
	g := NewGRPC(Track(NewRegistry()))
	info := &grpc.UnaryServerInfo{FullMethod: "/tabula.v1.TabletServer/MutateRow"}
	h := func(context.Context, any) (any, error) { return nil, nil }
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			g.unary(ctx, nil, info, h)
		}
	})
}

func BenchmarkUnaryNoInterceptor(b *testing.B) {
	h := func(context.Context, any) (any, error) { return nil, nil }
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h(ctx, nil)
		}
	})
}
