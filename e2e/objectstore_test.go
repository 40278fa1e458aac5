package e2e

import (
	"os"
	"testing"
	"time"
)

// TestLosingAHostLosesNothing: tablets on an object store (SeaweedFS),
// three tablet servers each with its own local folder, as on three hosts.
// Under a write load one server is killed with kill -9 and its whole local
// folder deleted, as if the host were gone; its tablets reopen on the
// others from the store, the writers carry on, and afterwards every
// acknowledged write is readable and no failed write is half-applied.
func TestLosingAHostLosesNothing(t *testing.T) {
	slow(t)
	rng := newRand(t)
	c := startCluster(t, clusterOptions{objectStore: true})
	cl := c.newClient(t)
	const table = "hosts"
	createTable(t, c, cl, table, hexSplits)
	tbl := cl.Open(table)

	l := startLoad(tbl, 8, 1_000_000)
	defer l.finish()
	l.waitAcks(t, 200, 60*time.Second)

	ts := c.waitAssigned(t, cl, table, 30*time.Second)
	victim, lost := pickVictim(t, c, ts, rng)
	t.Logf("kill -9 %s holding %d tablets after %d acknowledged writes, and delete %s",
		victim.name, len(lost), l.acks.Load(), c.serverData(victim.id))
	victim.kill()
	if err := os.RemoveAll(c.serverData(victim.id)); err != nil {
		t.Fatal(err)
	}

	c.waitAssigned(t, cl, table, 60*time.Second)
	reassignedAt := time.Now()
	l.waitAcks(t, 200, 60*time.Second)
	time.Sleep(500 * time.Millisecond)
	l.finish()
	if n := l.ackedSince(reassignedAt, inTablets(lost)); n == 0 {
		t.Errorf("no write to the lost host's tablets was acknowledged after they were reassigned")
	}
	if f := l.fails.Load(); f > 0 {
		t.Logf("%d writes returned an error (allowed; checked for all-or-nothing), e.g. %q", f, l.failures(3))
	}
	t.Logf("%d writes acknowledged in all", l.acks.Load())
	l.model.verify(t, tbl, rng)
}
