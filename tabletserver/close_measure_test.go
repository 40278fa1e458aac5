package tabletserver

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// TestMeasureClose is a measurement, not a check (it runs only with
// CLOSE_MEASURE=<tablets>): a server holding that many tablets, each
// with CLOSE_ROWS (default 3) rows in its memtable, is closed, and the
// time Close takes is reported. docs/BENCHMARKS.md quotes it.
func TestMeasureClose(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CLOSE_MEASURE"))
	if n <= 0 {
		t.Skip("set CLOSE_MEASURE=<tablets> to measure")
	}
	rows := 3
	if r, err := strconv.Atoi(os.Getenv("CLOSE_ROWS")); err == nil {
		rows = r
	}
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	start := time.Now()
	loadForMeasure(t, e, c, srv, n, rows)
	t.Logf("loaded %d tablets of %d rows in %s", n, rows, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("Close of %d tablets: %s (%.0f tablets/s)", n, d.Round(time.Millisecond), float64(n)/d.Seconds())
}

// loadForMeasure assigns n tablets splitting the row space at "r%06d"
// keys, loads them 8 at a time and writes rows rows into each.
func loadForMeasure(t *testing.T, e *env, c tabulapb.TabletServerClient, srv *Server, n, rows int) {
	t.Helper()
	key := func(i int) []byte {
		if i == 0 || i == n {
			return nil
		}
		return fmt.Appendf(nil, "r%06d", i)
	}
	var wg sync.WaitGroup
	next := make(chan meta.TabletRecord)
	for range 8 {
		wg.Go(func() {
			for rec := range next {
				if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema}); err != nil {
					t.Errorf("LoadTablet %s: %v", rec.ID, err)
					continue
				}
				ref := &tabulapb.TabletRef{Table: rec.Table, TabletId: rec.ID, Epoch: rec.Epoch}
				for j := range rows {
					if err := put(e.ctx, c, ref, fmt.Sprintf("%s-%d", rec.Start, j), set("cf", "q", 1, "v")); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	for i := range n {
		next <- e.assign(fmt.Sprintf("t%06d", i), key(i), key(i+1), srv, 1)
	}
	close(next)
	wg.Wait()
}
