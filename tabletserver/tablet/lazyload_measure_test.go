package tablet

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/s3fs"
	"github.com/tabuladb/tabula/wal"
)

// TestMeasureLoadBySSTables measures a load of a tablet of 1, 8 and 32
// SSTables (flushes of 1,000 rows each, one after the other, closed
// cleanly: nothing to replay) at a new epoch, and the first point read
// after it: wall time of each as medians over n loads, each of its own
// tablet, and on an object store the requests the median load made.
// TABULA_MEASURE_LOADS=n runs it on SeaweedFS (TABULA_WEED or
// .tools/bin/weed); TABULA_MEASURE_STORE=local on the local disk instead
// (times only). The file is the same in the trees compared, so that old
// and new test binaries measure the same thing:
//
//	TABULA_MEASURE_LOADS=10 go test ./tabletserver/tablet -run TestMeasureLoadBySSTables -v
func TestMeasureLoadBySSTables(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TABULA_MEASURE_LOADS"))
	if n <= 0 {
		t.Skip("set TABULA_MEASURE_LOADS=<loads> to measure")
	}
	local := os.Getenv("TABULA_MEASURE_STORE") == "local"
	var (
		fsys vfs.FS
		s3   *s3fs.FS
		root = t.TempDir()
	)
	if local {
		fsys = vfs.Default
	} else {
		s3 = startObjectStore(t).(*s3fs.FS)
		fsys, root = s3, "/model"
	}
	requests := func() s3fs.Requests {
		if s3 == nil {
			return s3fs.Requests{}
		}
		return s3.Requests()
	}
	for _, files := range []int{1, 8, 32} {
		var load, read []time.Duration
		var reqs, readReqs []s3fs.Requests
		for i := range n {
			name := fmt.Sprintf("m%d/t%03d", files, i)
			opts := testOptions(root + "/tables/" + name)
			opts.FS, opts.Name = fsys, name
			opts.Epoch, opts.Log = 1, sharedLogAt(t, fsys, root, fmt.Sprintf("old-%d-%d", files, i), wal.SyncNone)
			tb := openTablet(t, opts)
			for f := range files {
				for r := range 1000 {
					apply(t, tb, fmt.Sprintf("row%06d", f*1000+r), set("a", "q", 1, "value"))
				}
				if err := tb.Flush(bg); err != nil {
					t.Fatal(err)
				}
			}
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			opts.Create, opts.Epoch = false, 2
			opts.Log = sharedLogAt(t, fsys, root, fmt.Sprintf("new-%d-%d", files, i), wal.SyncNone)
			before, start := requests(), time.Now()
			next, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			load = append(load, time.Since(start))
			reqs = append(reqs, requests().Sub(before))
			row := []byte(fmt.Sprintf("row%06d", files*1000/2+1))
			before, start = requests(), time.Now()
			if cells, err := next.ReadRow(bg, row, nil); err != nil || len(cells) == 0 {
				t.Fatalf("ReadRow(%s) = %d cells, %v", row, len(cells), err)
			}
			read = append(read, time.Since(start))
			readReqs = append(readReqs, requests().Sub(before))
			if err := next.Close(); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(load)
		slices.Sort(read)
		byTotal := func(a, b s3fs.Requests) int { return int(a.Total() - b.Total()) }
		slices.SortFunc(reqs, byTotal)
		slices.SortFunc(readReqs, byTotal)
		m, r := reqs[len(reqs)/2], readReqs[len(readReqs)/2]
		t.Logf("%2d SSTables, loads %d: load median %v (min %v, max %v), requests %d (LIST %d GET %d PUT %d DELETE %d); first read median %v (min %v, max %v), requests %d (GET %d)",
			files, n, load[len(load)/2].Round(10*time.Microsecond), load[0].Round(10*time.Microsecond), load[len(load)-1].Round(10*time.Microsecond),
			m.Total(), m.List, m.Get, m.Put, m.Delete,
			read[len(read)/2].Round(10*time.Microsecond), read[0].Round(10*time.Microsecond), read[len(read)-1].Round(10*time.Microsecond),
			r.Total(), r.Get)
	}
}
