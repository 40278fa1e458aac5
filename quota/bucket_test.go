package quota

import (
	"testing"
	"time"
)

// clock is a test's time: it moves only when the test says.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Unix(1_000_000, 0)} }

func TestBucketRefillsAtItsRate(t *testing.T) {
	c := newClock()
	b := NewBucket(10, c.now()) // burst 10
	for i := range 10 {
		if d := b.Wait(c.now(), 1); d != 0 {
			t.Fatalf("request %d of the burst waits %s", i, d)
		}
		b.Take(1)
	}
	if d := b.Wait(c.now(), 1); d != 100*time.Millisecond {
		t.Fatalf("the 11th request waits %s, want 100ms (one token at 10/s)", d)
	}
	c.advance(100 * time.Millisecond)
	if d := b.Wait(c.now(), 1); d != 0 {
		t.Fatalf("after 100ms the request still waits %s", d)
	}
	b.Take(1)
	// A long idle time fills the bucket to its burst, no further.
	c.advance(time.Hour)
	for range 10 {
		if d := b.Wait(c.now(), 1); d != 0 {
			t.Fatalf("waits %s within the burst after an hour idle", d)
		}
		b.Take(1)
	}
	if d := b.Wait(c.now(), 1); d == 0 {
		t.Fatal("the bucket held more than its burst after an hour idle")
	}
}

func TestBucketLetsALargeRequestInWhenFullAndGoesIntoDebt(t *testing.T) {
	c := newClock()
	b := NewBucket(100, c.now()) // burst 100
	if d := b.Wait(c.now(), 1000); d != 0 {
		t.Fatalf("a request of 10 bursts waits %s on a full bucket, want 0 (else it would never pass)", d)
	}
	b.Take(1000)
	// 900 tokens of debt, plus 1 to take: 9.01s at 100/s.
	if d := b.Wait(c.now(), 1); d != 9010*time.Millisecond {
		t.Fatalf("after the large request the next waits %s, want 9.01s", d)
	}
	c.advance(9 * time.Second)
	if d := b.Wait(c.now(), 0); d != 0 {
		t.Fatalf("a zero cost (a read's bytes bucket) waits %s once the debt is repaid", d)
	}
}

func TestBucketChargeAfterTheFact(t *testing.T) {
	c := newClock()
	b := NewBucket(1000, c.now())
	b.Charge(c.now(), 3000) // a read returned 3 KB: 2 KB of debt
	if d := b.Wait(c.now(), 0); d != 2*time.Second {
		t.Fatalf("a read after a 2,000-byte debt at 1,000 B/s waits %s, want 2s", d)
	}
}

func TestBucketSetRateKeepsTokensUpToTheNewBurst(t *testing.T) {
	c := newClock()
	b := NewBucket(100, c.now())
	b.SetRate(10, c.now())
	for range 10 {
		if d := b.Wait(c.now(), 1); d != 0 {
			t.Fatalf("waits %s within the new burst", d)
		}
		b.Take(1)
	}
	if d := b.Wait(c.now(), 1); d == 0 {
		t.Fatal("a lowered rate kept the old burst's tokens")
	}
}
