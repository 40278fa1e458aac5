package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/client"
)

// TestHotTabletSplitsAndItsHalvesMoveApart puts the two halves of issue
// 10's promise together with real processes: requests to one key range
// make its tablet split by load (on its server), and the balancer, weighing
// load, then moves one half to the other server, so that the hot range is
// served by both. Two servers, two tablets ([, m) and [m, )) one each; 100
// small rows under h/, then four readers hammer them. Reads, not writes, so
// that the tablets' sizes stay tiny and equal: by count and size alone the
// balancer has no reason to move anything (2 tablets against 1 is as even
// as 3 tablets get), so only the load term can part the halves. Before
// the split nothing moves either (one hot tablet cannot be divided by
// moving it). Every read must return the row's cells; the rows are all
// there at the end.
func TestHotTabletSplitsAndItsHalvesMoveApart(t *testing.T) {
	slow(t)
	c := startCluster(t, clusterOptions{masters: 1, servers: 2,
		masterArgs: append([]string{"--load-interval", "1s"}, balancerArgs...),
		serverArgs: []string{"--load-window", "1s", "--hot-split-rps", "50", "--hot-split-windows", "3", "--hot-split-cooldown", "10m"},
	})
	cl := c.newClient(t)
	createTable(t, c, cl, "apart", []string{"m"})
	tbl := cl.Open("apart")
	model := &writeModel{acked: map[string]time.Time{}, failed: map[string]error{}}
	for i := range 100 {
		row := fmt.Sprintf("h/%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := tbl.Apply(ctx, []byte(row), rowMutation(row))
		cancel()
		if err != nil {
			t.Fatalf("writing %s: %v", row, err)
		}
		model.acked[row] = time.Now()
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	stopReaders := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopReaders)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				row := fmt.Sprintf("h/%03d", (i*7+g*13)%100)
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				r, err := tbl.ReadRow(ctx, []byte(row))
				cancel()
				if err == nil {
					err = checkLoadRow(row, r.Cells)
				}
				if err != nil {
					t.Errorf("reading %s: %v", row, err)
					return
				}
				reads.Add(1)
			}
		}()
	}

	// Wait for the split of [, m) inside h/, then for its halves to sit on
	// two servers.
	began := time.Now()
	var (
		tablets []client.TabletInfo
		split   time.Duration
	)
	for {
		if time.Since(began) > 60*time.Second {
			stopReaders()
			t.Fatalf("after %v (%d reads): the hot tablet's halves are not on two servers:\n%s",
				time.Since(began).Round(time.Second), reads.Load(), formatTablets(tablets))
		}
		time.Sleep(250 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ts, err := cl.Admin().Tablets(ctx, "apart")
		cancel()
		if err != nil {
			continue
		}
		tablets = ts
		var halves []client.TabletInfo
		for _, tb := range ts {
			if len(tb.End) > 0 && string(tb.End) <= "m" {
				halves = append(halves, tb)
			}
		}
		if len(halves) < 2 {
			continue
		}
		if split == 0 {
			split = time.Since(began)
		}
		if len(halves) == 2 && halves[0].State != "unassigned" && halves[1].State != "unassigned" && halves[0].Server != halves[1].Server {
			if key := string(halves[0].End); !strings.HasPrefix(key, "h/") {
				t.Fatalf("split at %q, want a row of the hot range h/", key)
			}
			break
		}
	}
	stopReaders()
	t.Logf("split by load %v after the reads began; halves apart %v after (%d reads):\n%s",
		split.Round(time.Millisecond), (time.Since(began) - split).Round(time.Millisecond), reads.Load(), formatTablets(tablets))

	log, err := os.ReadFile(c.masters[0].log)
	if err != nil {
		t.Fatal(err)
	}
	if !moveLine.Match(log) {
		t.Errorf("the master logged no event=move line")
	}
	verifyHot(t, tbl, model, map[string]bool{})
}
