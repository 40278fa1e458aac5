package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/bigtable"

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
	// run writes batches of rows with apply, from 16 goroutines.
	run := func(b *testing.B, apply func(keys []string) error) {
		var next atomic.Int64
		b.SetBytes(rows * valueSize)
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			keys := make([]string, rows)
			for pb.Next() {
				for i := range keys {
					n := next.Add(1)
					keys[i] = fmt.Sprintf("k%02d%014d", n%100, n)
				}
				if err := apply(keys); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	c, admin := bigClients(b)
	name := func(b *testing.B) string {
		name := fmt.Sprintf("bulk_%s_%d", b.Name()[len("BenchmarkBulkWrite/"):], b.N)
		if err := admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: name, SplitKeys: splits, Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { admin.DeleteTable(ctx, name) })
		return name
	}
	b.Run("native", func(b *testing.B) {
		tbl := nativeTable(b, name(b))
		run(b, func(keys []string) error {
			ks := make([][]byte, len(keys))
			ms := make([]*client.Mutation, len(keys))
			for i := range keys {
				ks[i], ms[i] = []byte(keys[i]), client.NewMutation().Set("cf", []byte("q"), 1000, value)
			}
			errs, err := tbl.ApplyBulk(ctx, ks, ms)
			return errors.Join(append(errs, err)...)
		})
	})
	b.Run("bigtable", func(b *testing.B) {
		tbl := c.Open(name(b))
		run(b, func(keys []string) error {
			ms := make([]*bigtable.Mutation, len(keys))
			for i := range keys {
				ms[i] = bigtable.NewMutation()
				ms[i].Set("cf", "q", 1000, value)
			}
			errs, err := tbl.ApplyBulk(ctx, keys, ms)
			return errors.Join(append(errs, err)...)
		})
	})
}

// bigClients connects the official clients to the package's gateway as
// `tabula bench` does.
func bigClients(tb testing.TB) (*bigtable.Client, *bigtable.AdminClient) {
	return officialClients(tb, cluster.GatewayAddr())
}

// nativeTable opens table with a Tabula client of its own, closed when b
// ends.
func nativeTable(b *testing.B, table string) *client.Table {
	cli, err := client.NewClientWithOptions(context.Background(), client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	return cli.Open(table)
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
	// run reads rows by key from 16 goroutines; read answers the cells
	// it found, one per row.
	run := func(b *testing.B, read func(key string) (int, error)) {
		var next atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if n, err := read(key(next.Add(1))); err != nil || n != 1 {
					b.Error(n, err)
					return
				}
			}
		})
	}
	b.Run("native", func(b *testing.B) {
		tbl := nativeTable(b, name)
		latest := client.WithFilter(rowfilter.CellsPerColumnLimit(1))
		run(b, func(k string) (int, error) {
			r, err := tbl.ReadRow(ctx, []byte(k), latest)
			return len(r.Cells), err
		})
	})
	b.Run("bigtable", func(b *testing.B) {
		latest := bigtable.RowFilter(bigtable.LatestNFilter(1))
		run(b, func(k string) (int, error) {
			r, err := bt.ReadRow(ctx, k, latest)
			return len(r["cf"]), err
		})
	})
}

// BenchmarkScan scans ranges of 1,000 rows of 1,000 bytes, newest cell per
// column, the shape of `tabula bench` scan (each of 16 goroutines scans a
// range of its own), through Tabula's client (native) and through the
// official client and the gateway (bigtable); b.N counts rows.
func BenchmarkScan(b *testing.B) {
	const ranges, perRange = 16, 1000
	ctx := context.Background()
	c, admin := bigClients(b)
	name := fmt.Sprintf("scan_%d", b.N)
	var splits []string
	for i := 1; i < 8; i++ {
		splits = append(splits, fmt.Sprintf("k%02d", i*ranges/8))
	}
	if err := admin.CreateTableFromConf(ctx, &bigtable.TableConf{TableID: name, SplitKeys: splits, Families: map[string]bigtable.GCPolicy{"cf": bigtable.MaxVersionsPolicy(1)}}); err != nil {
		b.Fatal(err)
	}
	defer admin.DeleteTable(ctx, name)
	bt := c.Open(name)
	value := make([]byte, 1000)
	for r := range ranges {
		keys := make([]string, perRange)
		muts := make([]*bigtable.Mutation, perRange)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%02d%06d", r, i)
			muts[i] = bigtable.NewMutation()
			muts[i].Set("cf", "q", 1000, value)
		}
		if errs, err := bt.ApplyBulk(ctx, keys, muts); err != nil || errs != nil {
			b.Fatal(err, errs)
		}
	}
	// run scans whole ranges from 16 goroutines until b.N rows are read;
	// scan answers the rows of range r it read.
	run := func(b *testing.B, scan func(r int) (int, error)) {
		var next, rows atomic.Int64
		b.SetBytes(int64(len(value)))
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for rows.Load() < int64(b.N) {
				n, err := scan(int(next.Add(1) % ranges))
				if err != nil || n != perRange {
					b.Error(n, err)
					return
				}
				rows.Add(int64(n))
			}
			for pb.Next() {
			}
		})
	}
	lo := func(r int) string { return fmt.Sprintf("k%02d", r) }
	hi := func(r int) string { return fmt.Sprintf("k%02d", r+1) }
	b.Run("native", func(b *testing.B) {
		tbl := nativeTable(b, name)
		latest := client.WithFilter(rowfilter.CellsPerColumnLimit(1))
		run(b, func(r int) (int, error) {
			it := tbl.ReadRows(ctx, client.NewRange([]byte(lo(r)), []byte(hi(r))), latest)
			defer it.Close()
			n := 0
			for it.Next() {
				n += len(it.Row().Cells)
			}
			return n, it.Err()
		})
	})
	b.Run("bigtable", func(b *testing.B) {
		latest := bigtable.RowFilter(bigtable.LatestNFilter(1))
		run(b, func(r int) (int, error) {
			n := 0
			err := bt.ReadRows(ctx, bigtable.NewRange(lo(r), hi(r)), func(row bigtable.Row) bool {
				n += len(row["cf"])
				return true
			}, latest)
			return n, err
		})
	})
}
