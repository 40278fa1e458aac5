package devcluster_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/families"
)

// The benchmarks below run the client against a real one-server dev
// cluster in this process, so that one CPU profile covers client and
// server: go test -run XXX -bench Cluster -cpuprofile cpu.out ./devcluster

const perfRows = 2000

func perfKey(i int) []byte { return fmt.Appendf(nil, "row%010d", i) }

// startPerfCluster starts a dev cluster with a table of perfRows rows of
// 1000-byte values and returns the table.
func startPerfCluster(b *testing.B) *client.Table {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dc, err := devcluster.Start(ctx, devcluster.Config{Dir: b.TempDir(), Servers: 1, NoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dc.Close() })
	cli, err := client.NewClient(ctx, dc.MasterAddr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	if err := cli.Admin().CreateTable(ctx, "perf", []families.Family{families.Default("cf")}, [][]byte{perfKey(perfRows / 2)}); err != nil {
		b.Fatal(err)
	}
	t := cli.Open("perf")
	val := make([]byte, 1000)
	var rows [][]byte
	var muts []*client.Mutation
	for i := range perfRows {
		rows = append(rows, perfKey(i))
		muts = append(muts, client.NewMutation().Set("cf", []byte("v"), 1000, val))
	}
	for {
		errs, err := t.ApplyBulk(ctx, rows, muts)
		if err != nil {
			b.Fatal(err)
		}
		failed := false
		for _, e := range errs {
			failed = failed || e != nil
		}
		if !failed {
			break
		}
		time.Sleep(50 * time.Millisecond) // tablets still being assigned
	}
	return t
}

func BenchmarkClusterReadRow(b *testing.B) {
	t := startPerfCluster(b)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(7919)) % perfRows
			row, err := t.ReadRow(ctx, perfKey(i))
			if err != nil || len(row.Cells) != 1 {
				b.Errorf("row %d: %d cells, %v", i, len(row.Cells), err)
				return
			}
		}
	})
}

func BenchmarkClusterApply(b *testing.B) {
	t := startPerfCluster(b)
	ctx := context.Background()
	val := make([]byte, 1000)
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(n.Add(1)) % perfRows
			if err := t.Apply(ctx, perfKey(i), client.NewMutation().Set("cf", []byte("v"), 2000, val)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkClusterApplyBulk(b *testing.B) {
	t := startPerfCluster(b)
	ctx := context.Background()
	val := make([]byte, 1000)
	var n atomic.Int64
	b.SetParallelism(2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rows := make([][]byte, 100)
			muts := make([]*client.Mutation, 100)
			for j := range rows {
				rows[j] = perfKey(int(n.Add(1)) % perfRows)
				muts[j] = client.NewMutation().Set("cf", []byte("v"), 2000, val)
			}
			if _, err := t.ApplyBulk(ctx, rows, muts); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkClusterScan(b *testing.B) {
	t := startPerfCluster(b)
	ctx := context.Background()
	b.ResetTimer()
	rows := 0
	for range b.N {
		it := t.ReadRows(ctx, nil)
		for it.Next() {
			rows++
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
		it.Close()
	}
	b.SetBytes(perfRows * 1000)
}
