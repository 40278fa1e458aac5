package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/families"
)

// inTablets returns a predicate: row falls in one of the tablets' ranges.
func inTablets(ts []client.TabletInfo) func(row string) bool {
	return func(row string) bool {
		for _, tb := range ts {
			if bytes.Compare([]byte(row), tb.Start) >= 0 && (len(tb.End) == 0 || bytes.Compare([]byte(row), tb.End) < 0) {
				return true
			}
		}
		return false
	}
}

// tabletsOn returns the tablets assigned to server id.
func tabletsOn(ts []client.TabletInfo, id string) []client.TabletInfo {
	var out []client.TabletInfo
	for _, tb := range ts {
		if tb.Server == id {
			out = append(out, tb)
		}
	}
	return out
}

// pickVictim picks a random tablet server that holds at least one tablet.
func pickVictim(t *testing.T, c *cluster, ts []client.TabletInfo, rng *rand.Rand) (*proc, []client.TabletInfo) {
	t.Helper()
	var holders []string
	for _, id := range c.liveServerIDs() {
		if len(tabletsOn(ts, id)) > 0 {
			holders = append(holders, id)
		}
	}
	if len(holders) == 0 {
		t.Fatalf("no live server holds a tablet:\n%s", formatTablets(ts))
	}
	id := holders[rng.IntN(len(holders))]
	return c.server(id), tabletsOn(ts, id)
}

// TestKillTabletServerMidLoad: kill -9 of a tablet server while 8 clients
// write. The client carries on once the master has reassigned the dead
// server's tablets (the new owners replay its commit logs); afterwards every
// acknowledged write is readable and no failed write is half-applied.
func TestKillTabletServerMidLoad(t *testing.T) {
	slow(t)
	rng := newRand(t)
	c := startCluster(t, clusterOptions{})
	cl := c.newClient(t)
	const table = "load"
	createTable(t, c, cl, table, hexSplits)
	tbl := cl.Open(table)

	l := startLoad(tbl, 8, 1_000_000)
	defer l.finish()
	l.waitAcks(t, 300, 30*time.Second)

	ts := c.waitAssigned(t, cl, table, 10*time.Second)
	victim, lost := pickVictim(t, c, ts, rng)
	t.Logf("kill -9 %s holding %d tablets after %d acknowledged writes", victim.name, len(lost), l.acks.Load())
	killedAt := time.Now()
	victim.kill()

	c.waitAssigned(t, cl, table, 30*time.Second)
	reassignedAt := time.Now()
	t.Logf("its tablets were reassigned %v after the kill", reassignedAt.Sub(killedAt).Round(time.Millisecond))

	l.waitAcks(t, 300, 30*time.Second)
	time.Sleep(500 * time.Millisecond)
	l.finish()

	if n := l.ackedSince(reassignedAt, inTablets(lost)); n == 0 {
		t.Errorf("no write to the killed server's tablets was acknowledged after they were reassigned: the client did not carry on")
	} else {
		t.Logf("%d writes to the killed server's tablets acknowledged after reassignment", n)
	}
	if f := l.fails.Load(); f > 0 {
		t.Logf("%d writes returned an error (allowed; checked for all-or-nothing), e.g. %q", f, l.failures(3))
	}
	l.model.verify(t, tbl, rng)
}

// TestKillLeaderMaster: kill -9 of the leader master while clients write
// and read, with a standby running. Data calls never fail (they do not go
// through the master, and locates are answered by the standby); admin calls
// work again on the new leader within about 10 s.
func TestKillLeaderMaster(t *testing.T) {
	slow(t)
	rng := newRand(t)
	c := startCluster(t, clusterOptions{})
	cl := c.newClient(t)
	const table = "before"
	createTable(t, c, cl, table, hexSplits)
	tbl := cl.Open(table)

	l := startLoad(tbl, 4, 1_000_000)
	defer l.finish()

	// Readers: point reads of acknowledged rows and prefix scans.
	var (
		readStop         = make(chan struct{})
		readWG           sync.WaitGroup
		reads, readFails atomic.Int64
		readErrMu        sync.Mutex
		readErrs         []string
	)
	for g := range 2 {
		readWG.Add(1)
		go func() {
			defer readWG.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for i := 0; ; i++ {
				select {
				case <-readStop:
					return
				default:
				}
				var err error
				if i%10 == 9 {
					prefix := fmt.Sprintf("%x/", r.IntN(16))
					_, err = scan(tbl, client.PrefixRange([]byte(prefix)))
				} else if row := l.randomAcked(r); row != "" {
					ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
					var got client.Row
					got, err = tbl.ReadRow(ctx, []byte(row))
					cancel()
					if err == nil {
						err = checkLoadRow(row, got.Cells)
					}
				}
				reads.Add(1)
				if err != nil {
					readFails.Add(1)
					readErrMu.Lock()
					if len(readErrs) < 5 {
						readErrs = append(readErrs, err.Error())
					}
					readErrMu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	stopReaders := func() {
		select {
		case <-readStop:
		default:
			close(readStop)
		}
		readWG.Wait()
	}
	defer stopReaders()

	l.waitAcks(t, 300, 30*time.Second)
	leader, standby := c.masters[0], c.masters[1]
	t.Logf("kill -9 the leader %s after %d acknowledged writes", leader.name, l.acks.Load())
	killedAt := time.Now()
	leader.kill()

	// Admin calls resume on the new leader.
	var adminErr error
	created := false
	for attempt := 0; ; attempt++ {
		if time.Since(killedAt) > 30*time.Second {
			t.Fatalf("admin calls still fail 30s after the leader died: %v", adminErr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, adminErr = cl.Admin().ListTables(ctx)
		if adminErr == nil && !created {
			adminErr = cl.Admin().CreateTable(ctx, "after", []families.Family{families.Default(famA), families.Default(famB)}, [][]byte{[]byte("8")})
			if status.Code(adminErr) == codes.AlreadyExists && attempt > 0 {
				adminErr = nil // an earlier attempt went through
			}
			created = adminErr == nil
		}
		cancel()
		if adminErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	resumed := time.Since(killedAt)
	t.Logf("admin calls succeeded again %v after the kill", resumed.Round(time.Millisecond))
	if resumed > 10*time.Second+leaseTTL {
		t.Errorf("admin calls resumed only %v after the leader died; want within ~10s", resumed)
	}
	c.waitLeader(t, standby, 5*time.Second)

	// The new leader assigns the new table's tablets, and they serve.
	c.waitAssigned(t, cl, "after", 30*time.Second)
	after := cl.Open("after")
	for _, row := range []string{"1-after", "9-after"} {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := after.Apply(ctx, []byte(row), rowMutation(row))
		var got client.Row
		if err == nil {
			got, err = after.ReadRow(ctx, []byte(row))
		}
		cancel()
		if err == nil {
			err = checkLoadRow(row, got.Cells)
		}
		if err != nil {
			t.Errorf("table created on the new leader: row %q: %v", row, err)
		}
	}

	l.waitAcks(t, 300, 30*time.Second)
	l.finish()
	stopReaders()

	if f := l.fails.Load(); f > 0 {
		t.Errorf("%d data writes failed across the master failover; want 0. e.g. %q", f, l.failures(3))
	}
	if f := readFails.Load(); f > 0 {
		t.Errorf("%d of %d reads failed across the master failover; want 0. e.g. %q", f, reads.Load(), readErrs)
	}
	t.Logf("%d writes and %d reads during the test", l.acks.Load(), reads.Load())
	l.model.verify(t, tbl, rng)
}
