package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/internal/testkit/writers"
)

// TestHotRangeSplitsByLoad: one tablet server with load windows of 1 s and
// load splits at 50 req/s over 3 windows; a single-tablet table whose
// bytes sit under "q/" (100 rows of 128 KiB) while four writers hammer rows
// under "h/". The tablet splits by load within seconds, at a row of the
// hot range (a size split would cut under "q/"), the server logs it with
// event=split reason=load, and every acknowledged write reads back.
func TestHotRangeSplitsByLoad(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{masters: 1, servers: 1, serverArgs: []string{
		"--load-window", "1s", "--hot-split-rps", "50", "--hot-split-windows", "3", "--hot-split-cooldown", "10m",
	}})
	cl := c.newClient(t)
	createTable(t, c, cl, "hot", nil)
	tbl := cl.Open("hot")
	model := &writeModel{acked: map[string]time.Time{}, failed: map[string]error{}}
	bulk := map[string]bool{}

	// The cold bulk: 12.5 MiB in 100 requests, so that the size midpoint
	// is clearly under q/ however much the hot writers add, and so that
	// at most two windows see 50 of these requests (a load split needs
	// three in a row); then at least two quiet windows.
	big := strings.Repeat("x", 128<<10)
	for b := range 10 {
		var rows [][]byte
		var muts []*client.Mutation
		for i := range 10 {
			row := fmt.Sprintf("q/%04d", b*10+i)
			rows = append(rows, []byte(row))
			muts = append(muts, rowMutation(row).Set(famA, []byte("big"), writeTS, []byte(big)))
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		errs, err := tbl.ApplyBulk(ctx, rows, muts)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("bulk write of %s: %v", rows[i], e)
			}
			bulk[string(rows[i])] = true
		}
	}
	time.Sleep(2500 * time.Millisecond)

	// The hot writers: new rows under h/, spread over h/000..h/099.
	var (
		acks     atomic.Int64
		splitSet atomic.Bool
		postAcks atomic.Int64 // acknowledged after the split was seen
	)
	ws := writers.Start(t, 4, func(w *writers.Writer, i int) bool {
		g := w.N
		row := fmt.Sprintf("h/%03d/%d/%06d", (i*7+g*13)%100, g, i)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := tbl.Apply(ctx, []byte(row), rowMutation(row))
		cancel()
		model.mu.Lock()
		if err == nil {
			model.acked[row] = time.Now()
			acks.Add(1)
			if splitSet.Load() {
				postAcks.Add(1)
			}
		} else {
			model.failed[row] = err
		}
		model.mu.Unlock()
		return true
	})

	began := time.Now()
	var tablets []client.TabletInfo
	for {
		if time.Since(began) > 40*time.Second {
			ws.Stop()
			t.Fatalf("no load split within 40 s (%d writes acknowledged, about %.0f/s):\n%s",
				acks.Load(), float64(acks.Load())/time.Since(began).Seconds(), formatTablets(tablets))
		}
		time.Sleep(200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ts, err := cl.Admin().Tablets(ctx, "hot")
		cancel()
		if err == nil {
			tablets = ts
		}
		if len(tablets) >= 2 {
			break
		}
	}
	splitAfter := time.Since(began)
	splitSet.Store(true)
	// Keep writing through the split until the children have taken
	// writes, then stop.
	for deadline := time.Now().Add(20 * time.Second); postAcks.Load() < 200 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	ws.Stop()
	if postAcks.Load() == 0 {
		t.Fatal("no write acknowledged after the split")
	}
	t.Logf("split after %v of hot load (%d writes acknowledged, %d after the split):\n%s",
		splitAfter.Round(time.Millisecond), acks.Load(), postAcks.Load(), formatTablets(tablets))
	if len(tablets) != 2 {
		t.Fatalf("%d tablets, want the 2 children of one load split (the cooldown forbids more)", len(tablets))
	}
	key := string(tablets[0].End)
	if !strings.HasPrefix(key, "h/") {
		t.Fatalf("split at %q, want a row of the hot range h/ (the bytes are under q/)", key)
	}

	log, err := os.ReadFile(c.servers[0].log)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "msg=\"split tablet\"") && strings.Contains(l, "event=split") {
			line = l
		}
	}
	for _, want := range []string{"reason=load", "table=hot", "row=" + key, "rps=", "left_share=", "right_share=", "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("the server's split line %q lacks %q", line, want)
		}
	}
	verifyHot(t, tbl, model, bulk)
}

// verifyHot scans the table: every bulk row holds its three cells, every
// acknowledged hot row its two, and no other row is there but hot rows
// whose write failed (they may have been applied).
func verifyHot(t *testing.T, tbl *client.Table, model *writeModel, bulk map[string]bool) {
	t.Helper()
	present := map[string]bool{}
	bad := 0
	for _, r := range scanAll(t, tbl) {
		row := string(r.Key)
		present[row] = true
		_, acked := model.acked[row]
		_, failed := model.failed[row]
		var err error
		switch {
		case bulk[row]:
			if len(r.Cells) != 3 {
				err = fmt.Errorf("bulk row %s has %d cells, want 3", row, len(r.Cells))
			}
		case acked || failed:
			err = checkLoadRow(row, r.Cells)
		default:
			err = fmt.Errorf("row %s was never written", row)
		}
		if err != nil {
			if bad++; bad <= 10 {
				t.Error(err)
			}
		}
	}
	for row := range bulk {
		if !present[row] {
			if bad++; bad <= 10 {
				t.Errorf("bulk row %s is missing", row)
			}
		}
	}
	for row := range model.acked {
		if !present[row] {
			if bad++; bad <= 10 {
				t.Errorf("acknowledged row %s is missing", row)
			}
		}
	}
	t.Logf("verified %d rows: %d bulk, %d acknowledged hot writes, %d failed, %d problems", len(present), len(bulk), len(model.acked), len(model.failed), bad)
}
