package tablet

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs/s3fs"
	"github.com/tabuladb/tabula/wal"
)

// TestMeasureLoadOnAnObjectStore measures what a tablet load costs on
// SeaweedFS: the wall time of Open at a new epoch (what a failover or a
// move does) and the store requests it makes, as medians over n loads,
// each of its own tablet: "moved", a tablet closed cleanly (everything
// flushed: 1,000 rows in one SSTable, no log to replay), and "failover",
// the same with 100 more rows its old owner wrote and never flushed
// (replayed from the old owner's shared log, then sealed into an SSTable),
// its log written with sync=none, so it holds the rows in a few parts, as
// group commit under load does; and "failover-parts", the same with the
// old owner's log written with sync=always by one writer: a part per row,
// 1,100 parts for the replay to read (a lightly loaded server's log, whose
// group commits hold one write each). Only the open is timed. It only runs with TABULA_MEASURE_LOADS set to n:
//
//	TABULA_MEASURE_LOADS=20 go test ./tabletserver/tablet -run TestMeasureLoadOnAnObjectStore -v
func TestMeasureLoadOnAnObjectStore(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TABULA_MEASURE_LOADS"))
	if n <= 0 {
		t.Skip("set TABULA_MEASURE_LOADS=<loads> to measure")
	}
	fsys := startObjectStore(t).(*s3fs.FS)
	for _, kind := range []string{"moved", "failover", "failover-parts"} {
		var took []time.Duration
		var reqs []s3fs.Requests
		for i := range n {
			opts := testOptions(fmt.Sprintf("/model/tables/%s/t%03d", kind, i))
			opts.FS, opts.Name = fsys, fmt.Sprintf("%s/t%03d", kind, i)
			mode := wal.SyncNone
			if kind == "failover-parts" {
				mode = wal.SyncAlways
			}
			opts.Epoch, opts.Log = 1, sharedLogAt(t, fsys, "/model", fmt.Sprintf("old-%s-%d", kind, i), mode)
			tb := openTablet(t, opts)
			for r := range 1000 {
				apply(t, tb, fmt.Sprintf("row%05d", r), set("a", "q", 1, "value"))
			}
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
			if kind != "moved" {
				for r := range 100 {
					apply(t, tb, fmt.Sprintf("late%05d", r), set("a", "q", 1, "value"))
				}
			}
			if err := tb.Close(); err != nil { // "failover": unflushed, the log kept
				t.Fatal(err)
			}
			opts.Create, opts.Epoch = false, 2
			opts.Log = sharedLogAt(t, fsys, "/model", fmt.Sprintf("new-%s-%d", kind, i), wal.SyncAlways)
			before, start := fsys.Requests(), time.Now()
			next, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(start))
			reqs = append(reqs, fsys.Requests().Sub(before))
			if err := next.Close(); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(took)
		slices.SortFunc(reqs, func(a, b s3fs.Requests) int { return int(a.Total() - b.Total()) })
		m := reqs[len(reqs)/2]
		t.Logf("%-14s loads %d: median %v (min %v, max %v); requests (median) %d: LIST %d GET %d HEAD %d PUT %d COPY %d DELETE %d",
			kind, n, took[len(took)/2].Round(100*time.Microsecond), took[0].Round(100*time.Microsecond), took[len(took)-1].Round(100*time.Microsecond),
			m.Total(), m.List, m.Get, m.Head, m.Put, m.Copy, m.Delete)
	}
}
