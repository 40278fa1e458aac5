package devcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/devcluster"
	"github.com/tabuladb/tabula/families"
)

// BenchmarkClusterLoad loads the same rows (100-byte values, one cell
// each) into a fresh 4-tablet table of a one-server dev cluster with its
// default durability (the commit log synced), by bulk load and by
// ApplyBulk batches of 500 rows (what `tabula import` sends), so that the
// two compare side by side in one run:
//
//	go test -run '^$' -bench ClusterLoad -benchtime 3x -count 3 ./devcluster
func BenchmarkClusterLoad(b *testing.B) {
	const rows, valueSize = 200_000, 100
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dc, err := devcluster.Start(ctx, devcluster.Config{Dir: b.TempDir(), Servers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dc.Close() })
	cli, err := client.NewClient(ctx, dc.MasterAddr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	data := make([]client.Row, rows)
	for i := range data {
		v := make([]byte, valueSize)
		for j := range v {
			v[j] = byte(i*31 + j*7)
		}
		data[i] = client.Row{Key: fmt.Appendf(nil, "%08d", i), Cells: []cell.Cell{{Family: "cf", Qualifier: []byte("q"), Timestamp: 1000, Value: v}}}
	}
	splits := [][]byte{fmt.Appendf(nil, "%08d", rows/4), fmt.Appendf(nil, "%08d", rows/2), fmt.Appendf(nil, "%08d", 3*rows/4)}
	n := 0
	fresh := func(b *testing.B) *client.Table {
		b.StopTimer()
		defer b.StartTimer()
		n++
		name := fmt.Sprintf("load%d", n)
		if err := cli.Admin().CreateTable(ctx, name, []families.Family{families.Default("cf")}, splits); err != nil {
			b.Fatal(err)
		}
		t := cli.Open(name)
		for _, s := range append([][]byte{{0}}, splits...) {
			for {
				if _, err := t.ReadRow(ctx, s); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		return t
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("bulkload", func(b *testing.B) {
		for range b.N {
			t := fresh(b)
			if _, err := t.BulkLoad(ctx, data); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("applybulk", func(b *testing.B) {
		for range b.N {
			t := fresh(b)
			for i := 0; i < rows; i += 500 {
				keys := make([][]byte, 0, 500)
				muts := make([]*client.Mutation, 0, 500)
				for _, r := range data[i:min(i+500, rows)] {
					c := r.Cells[0]
					keys = append(keys, r.Key)
					muts = append(muts, client.NewMutation().Set(c.Family, c.Qualifier, c.Timestamp, c.Value))
				}
				errs, err := t.ApplyBulk(ctx, keys, muts)
				if err != nil {
					b.Fatal(err)
				}
				for _, e := range errs {
					if e != nil {
						b.Fatal(e)
					}
				}
			}
		}
		report(b)
	})
}
