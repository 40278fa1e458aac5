package backup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tabuladb/tabula/backup"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/backend"
)

// BenchmarkBackupCost measures what one backup costs on an object store
// (SeaweedFS) in requests and bytes (docs/BENCHMARKS.md "Backups: store
// requests and bytes"): a table of 4 tablets, 2 families, 3 flushes (24
// SSTables, 4,000 rows of 1 KiB values); the first backup, a second of the
// unchanged table, and a third after rows were rewritten in one tablet
// and flushed. Counts, not times: they do not move with the load (but for
// a folder's marker two workers may both write); run with -benchtime=1x.
func BenchmarkBackupCost(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, srv := startWorldAndStore(ctx, b)
	const table = "costs"
	if err := w.cli.Admin().CreateTable(ctx, table, []families.Family{families.Default("a"), families.Default("b")},
		[][]byte{[]byte("r1000"), []byte("r2000"), []byte("r3000")}); err != nil {
		b.Fatal(err)
	}
	tbl := w.cli.Open(table)
	rnd := rand.NewChaCha8([32]byte{1}) // values that do not compress: bytes as stored
	write := func(from, to, round int) {
		for i := from; i < to; i++ {
			fam := "a"
			if i%2 == 1 {
				fam = "b"
			}
			val := make([]byte, 1024)
			_, _ = rnd.Read(val)
			applyWhenServing(ctx, b, tbl, fmt.Appendf(nil, "r%04d", i), client.NewMutation().Set(fam, []byte("q"), int64(round), val))
		}
		if err := w.cli.Admin().FlushTable(ctx, table); err != nil {
			b.Fatal(err)
		}
	}
	for round := range 3 {
		write(0, 4000, round+1)
	}
	for i := 0; b.Loop(); i++ {
		loc, err := backup.Open(ctx, fmt.Sprintf("s3://backups/run%d?endpoint=%s", i, srv.Endpoint()), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		opts := backup.CreateOptions{Table: table, To: loc, Source: vfs.Default, SourceRoot: w.root, Cluster: w.cli.Admin(), Workers: 4, Now: clock()}
		step := func(what string) {
			before, _ := backend.Requests(loc.FS)
			start := time.Now()
			res, err := backup.Create(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			after, _ := backend.Requests(loc.FS)
			d := after.Sub(before)
			b.Logf("%s: %d tablets, %d files, %d bytes named; copied %d files, %d bytes; present %d; requests %d (LIST %d, GET %d, HEAD %d, PUT %d, COPY %d, DELETE %d); %s",
				what, len(res.Manifest.Tablets), len(res.Manifest.Files), res.Manifest.Bytes(), res.Copied, res.CopiedBytes, res.Present,
				d.Total(), d.List, d.Get, d.Head, d.Put, d.Copy, d.Delete, time.Since(start).Round(time.Millisecond))
		}
		step("first backup")
		step("unchanged table")
		write(0, 1000, 10+i) // rewrites tablet 1's rows, one flush
		step("after rewriting one tablet")
	}
}
