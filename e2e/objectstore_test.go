package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestStoreOutageLosesNothing: the object store is killed mid-load and
// started again. While it is down no write is acknowledged (a commit log
// upload that fails is refused, never acknowledged); after it is back the
// writes resume with no restart of any Tabula process, and every
// acknowledged write is readable.
func TestStoreOutageLosesNothing(t *testing.T) {
	slow(t)
	rng := newRand(t)
	c := startCluster(t, clusterOptions{objectStore: true})
	cl := c.newClient(t)
	const table = "outage"
	createTable(t, c, cl, table, hexSplits)
	tbl := cl.Open(table)

	l := startLoad(tbl, 8, 1_000_000)
	defer l.finish()
	l.waitAcks(t, 200, 60*time.Second)

	c.store.Kill()
	downAt := time.Now()
	time.Sleep(3 * time.Second)
	acksDown := l.acks.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.store.Restart(ctx); err != nil {
		t.Fatalf("restarting SeaweedFS: %v", err)
	}
	upAt := time.Now()
	t.Logf("SeaweedFS was down for %v; %d writes acknowledged before it came back", upAt.Sub(downAt).Round(time.Millisecond), acksDown)
	l.waitAcks(t, 200, 2*time.Minute)
	t.Logf("writes resumed %v after the store came back", time.Since(upAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	l.finish()
	if n := l.ackedBetween(downAt.Add(time.Second), upAt); n > 0 {
		// A write may finish its upload just before the kill and be
		// acknowledged a moment later; a whole second into the outage none
		// can.
		t.Errorf("%d writes were acknowledged while the store was down", n)
	}
	if f := l.fails.Load(); f > 0 {
		t.Logf("%d writes returned an error (allowed; checked for all-or-nothing), e.g. %q", f, l.failures(3))
	}
	l.model.verify(t, tbl, rng)
}

// TestExpiredCredentialsLoseNothing: the key every process reads from the
// shared credentials file stops working mid-load (the store forgets it, as
// when temporary credentials expire). Writes then fail and none is
// acknowledged, the logs say that the store refused the
// credentials in that file, and once the file holds a working key, writes
// resume without restarting Tabula and every acknowledged write is there.
func TestExpiredCredentialsLoseNothing(t *testing.T) {
	slow(t)
	rng := newRand(t)
	identity := func(name, key, secret string) string {
		return `{"name": "` + name + `", "credentials": [{"accessKey": "` + key + `", "secretKey": "` + secret + `"}],
			"actions": ["Admin:tabula", "Read:tabula", "Write:tabula", "List:tabula", "Tagging:tabula"]}`
	}
	a, b := identity("a", "KEYA", "secret-a"), identity("b", "KEYB", "secret-bb")
	creds := filepath.Join(t.TempDir(), "credentials")
	writeCreds := func(key, secret string) {
		t.Helper()
		body := "[default]\naws_access_key_id = " + key + "\naws_secret_access_key = " + secret + "\n"
		tmp := creds + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, creds); err != nil { // as a rotating agent does: whole or not at all
			t.Fatal(err)
		}
	}
	writeCreds("KEYA", "secret-a")
	c := startCluster(t, clusterOptions{objectStore: true,
		storeIdentities: `{"identities": [` + a + `, ` + b + `]}`, storeCredentials: creds})
	cl := c.newClient(t)
	const table = "creds"
	createTable(t, c, cl, table, hexSplits)
	tbl := cl.Open(table)

	l := startLoad(tbl, 8, 1_000_000)
	defer l.finish()
	l.waitAcks(t, 200, 60*time.Second)

	// Key A expires: the store restarts knowing only key B.
	if err := c.store.SetS3Config(`{"identities": [` + b + `]}`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	expiredAt := time.Now()
	if err := c.store.Restart(ctx); err != nil {
		t.Fatalf("restarting SeaweedFS without key A: %v", err)
	}
	// Long enough for writes to hit the store with the expired key (the
	// store's first write after a restart takes seconds).
	refusal := "the store refused the credentials in AWS_SHARED_CREDENTIALS_FILE=" + creds
	deadline := time.Now().Add(60 * time.Second)
	for !logsContain(t, append(c.masters, c.servers...), refusal) {
		if time.Now().After(deadline) {
			t.Fatalf("no master or tablet server log says %q", refusal)
		}
		time.Sleep(200 * time.Millisecond)
	}
	writeCreds("KEYB", "secret-bb")
	rotatedAt := time.Now()
	t.Logf("key A refused %v after it expired; the file now holds key B", rotatedAt.Sub(expiredAt).Round(time.Millisecond))
	l.waitAcks(t, 200, 2*time.Minute)
	t.Logf("writes resumed %v after the rotation", time.Since(rotatedAt).Round(time.Millisecond))
	time.Sleep(500 * time.Millisecond)
	l.finish()
	if n := l.ackedBetween(expiredAt.Add(time.Second), rotatedAt); n > 0 {
		t.Errorf("%d writes were acknowledged while the only key was expired", n)
	}
	if f := l.fails.Load(); f > 0 {
		t.Logf("%d writes returned an error (allowed; checked for all-or-nothing), e.g. %q", f, l.failures(3))
	}
	l.model.verify(t, tbl, rng)
}

// logsContain reports whether the log of any of ps contains s.
func logsContain(t *testing.T, ps []*proc, s string) bool {
	t.Helper()
	for _, p := range ps {
		b, err := os.ReadFile(p.log)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
