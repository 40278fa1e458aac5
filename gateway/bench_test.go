package gateway_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/bigtable"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/rowfilter"
)

// BenchmarkBulkWrite is one batched write of 100 rows of 1,000 bytes, the
// shape of `tabula bench --batch 100`, through Tabula's client (native) and
// through the official client and the gateway (bigtable), against the
// package's dev cluster; run with -cpuprofile to see where each spends.
func BenchmarkBulkWrite(b *testing.B) {
	const rows, valueSize = 100, 1000
	ctx := context.Background()
	var splits []string
	for i := 1; i < 8; i++ {
		splits = append(splits, fmt.Sprintf("k%02d", i*100/8))
	}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(i)
	}
	key := func(n int64) string { return fmt.Sprintf("k%02d%014d", n%100, n) }
	b.Run("native", func(b *testing.B) {
		c, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		_, adminBT := bigClients(b)
		name := fmt.Sprintf("bulk_native_%d", b.N)
		if err := adminBT.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: name, SplitKeys: splits, Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}); err != nil {
			b.Fatal(err)
		}
		defer adminBT.DeleteTable(ctx, name)
		tbl := c.Open(name)
		var next atomic.Int64
		b.SetBytes(rows * valueSize)
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ks := make([][]byte, rows)
				ms := make([]*client.Mutation, rows)
				for i := range ks {
					ks[i] = []byte(key(next.Add(1)))
					ms[i] = client.NewMutation().Set("cf", []byte("q"), 1000, value)
				}
				errs, err := tbl.ApplyBulk(ctx, ks, ms)
				if err != nil {
					b.Error(err)
					return
				}
				for _, e := range errs {
					if e != nil {
						b.Error(e)
						return
					}
				}
			}
		})
	})
	b.Run("bigtable", func(b *testing.B) {
		c, adminBT := bigClients(b)
		name := fmt.Sprintf("bulk_bt_%d", b.N)
		if err := adminBT.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: name, SplitKeys: splits, Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}); err != nil {
			b.Fatal(err)
		}
		defer adminBT.DeleteTable(ctx, name)
		tbl := c.Open(name)
		var next atomic.Int64
		b.SetBytes(rows * valueSize)
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ks := make([]string, rows)
				ms := make([]*bigtable.Mutation, rows)
				for i := range ks {
					ks[i] = key(next.Add(1))
					ms[i] = bigtable.NewMutation()
					ms[i].Set("cf", "q", 1000, value)
				}
				errs, err := tbl.ApplyBulk(ctx, ks, ms)
				if err != nil {
					b.Error(err)
					return
				}
				for _, e := range errs {
					if e != nil {
						b.Error(e)
						return
					}
				}
			}
		})
	})
}

// bigClients connects the official data and admin clients to the gateway
// over one connection that takes large messages, as `tabula bench` does.
func bigClients(tb testing.TB) (*bigtable.Client, *bigtable.AdminClient) {
	tb.Helper()
	ctx := context.Background()
	conn, err := grpc.NewClient(cluster.GatewayAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		tb.Fatal(err)
	}
	cfg := bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}, DisableSession: true}
	c, err := bigtable.NewClientWithConfig(ctx, project, instance, cfg, option.WithGRPCConn(conn))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := bigtable.NewAdminClient(ctx, project, instance, option.WithGRPCConn(conn))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(); a.Close(); conn.Close() })
	return c, a
}

// BenchmarkPointRead reads one row of 1,000 bytes by key, newest cell per
// column, the shape of `tabula bench` seqread and randread, through
// Tabula's client (native) and through the official client and the
// gateway (bigtable).
func BenchmarkPointRead(b *testing.B) {
	const rows = 1000
	ctx := context.Background()
	c, admin := bigClients(b)
	name := fmt.Sprintf("point_%d", b.N)
	if err := admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: name, Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}); err != nil {
		b.Fatal(err)
	}
	defer admin.DeleteTable(ctx, name)
	bt := c.Open(name)
	key := func(n int64) string { return fmt.Sprintf("k%06d", n%rows) }
	keys := make([]string, rows)
	muts := make([]*bigtable.Mutation, rows)
	for i := range keys {
		keys[i] = key(int64(i))
		muts[i] = bigtable.NewMutation()
		muts[i].Set("cf", "q", 1000, make([]byte, 1000))
	}
	if errs, err := bt.ApplyBulk(ctx, keys, muts); err != nil || errs != nil {
		b.Fatal(err, errs)
	}
	b.Run("native", func(b *testing.B) {
		cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		tbl := cli.Open(name)
		latest := client.WithFilter(rowfilter.CellsPerColumnLimit(1))
		var next atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, err := tbl.ReadRow(ctx, []byte(key(next.Add(1))), latest)
				if err != nil || len(r.Cells) != 1 {
					b.Error(r, err)
					return
				}
			}
		})
	})
	b.Run("bigtable", func(b *testing.B) {
		latest := bigtable.RowFilter(bigtable.LatestNFilter(1))
		var next atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r, err := bt.ReadRow(ctx, key(next.Add(1)), latest)
				if err != nil || len(r["cf"]) != 1 {
					b.Error(r, err)
					return
				}
			}
		})
	})
}
