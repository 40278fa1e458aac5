package gateway_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
)

// methodLog records the tablet server methods a Tabula client calls (not
// the master's: locating a tablet is not part of what is checked).
type methodLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *methodLog) add(method string) {
	if !strings.HasPrefix(method, "/tabula.v1.TabletServer/") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, method[strings.LastIndex(method, "/")+1:])
}

// take returns the methods called since the last take.
func (l *methodLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

func (l *methodLog) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			l.add(method)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			l.add(method)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// A Bigtable read of exactly one row key (what ReadRow sends) is one
// unary ReadRow call to the tablet server, and answers what a stream
// would: the row through the filter, nothing for a missing row or a row
// the filter empties, whatever the limit or direction. A read of two keys
// or of a range still streams.
func TestPointReadIsOneUnaryCall(t *testing.T) {
	ctx := testContext(t)
	var log methodLog
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}, DialOptions: log.dialOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c, admin := startGateway(t, cli, gateway.Options{})
	createTable(t, admin, &bigtable.TableConf{TableID: "pointread", Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy(), "other": bigtable.NoGcPolicy()}})
	tbl := c.Open("pointread")
	m := bigtable.NewMutation()
	m.Set("cf", "q", 1000, []byte("old"))
	m.Set("cf", "q", 2000, []byte("new"))
	m.Set("other", "x", 1000, []byte("x"))
	if err := tbl.Apply(ctx, "row", m); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Apply(ctx, "row2", m); err != nil {
		t.Fatal(err)
	}
	log.take()
	reads := []struct {
		name string
		rows bigtable.RowSet
		opts []bigtable.ReadOption
		want string
	}{
		{"the newest cell", bigtable.RowList{"row"}, []bigtable.ReadOption{bigtable.RowFilter(bigtable.LatestNFilter(1))}, "row: cf:q@2000=new other:x@1000=x"},
		{"every cell", bigtable.RowList{"row"}, nil, "row: cf:q@2000=new cf:q@1000=old other:x@1000=x"},
		{"a missing row", bigtable.RowList{"none"}, nil, ""},
		{"a row the filter empties", bigtable.RowList{"row"}, []bigtable.ReadOption{bigtable.RowFilter(bigtable.FamilyFilter("nothere"))}, ""},
		{"limited and reversed", bigtable.RowList{"row"}, []bigtable.ReadOption{bigtable.LimitRows(1), bigtable.ReverseScan(), bigtable.RowFilter(bigtable.FamilyFilter("other"))}, "row: other:x@1000=x"},
	}
	for _, r := range reads {
		var got []string
		err := tbl.ReadRows(ctx, r.rows, func(row bigtable.Row) bool {
			got = append(got, render(row))
			return true
		}, r.opts...)
		if err != nil || strings.Join(got, "; ") != r.want {
			t.Errorf("%s: read %q, %v; want %q", r.name, got, err, r.want)
		}
		if calls := log.take(); !slices.Equal(calls, []string{"ReadRow"}) {
			t.Errorf("%s: the gateway called %v; want one ReadRow", r.name, calls)
		}
	}
	for _, rows := range []bigtable.RowSet{bigtable.RowList{"row", "row2"}, bigtable.PrefixRange("row")} {
		n := 0
		if err := tbl.ReadRows(ctx, rows, func(bigtable.Row) bool { n++; return true }); err != nil || n != 2 {
			t.Errorf("read of %v: %d rows, %v; want 2", rows, n, err)
		}
		if calls := log.take(); !slices.Contains(calls, "ReadRows") || slices.Contains(calls, "ReadRow") {
			t.Errorf("read of %v: the gateway called %v; want streams", rows, calls)
		}
	}
}
