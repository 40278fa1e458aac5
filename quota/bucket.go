package quota

import (
	"math"
	"time"
)

// Bucket is a token bucket: it fills at rate tokens a second up to burst
// (one second's worth, at least one token) and starts full. A request
// takes its cost; one larger than the burst is let in when the bucket is
// full and leaves it in debt, so that the average rate holds for requests
// of any size without refusing the large ones forever. A cost only known
// afterwards (the bytes a read returned) is charged with Charge, which
// may also leave a debt: further requests wait until it is repaid.
//
// A Bucket is not safe for concurrent use (the Limiter locks its quota); time comes
// from the caller, so that tests inject it.
type Bucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
	// next is when the retry of the latest refusal was told to come
	// back plus the time its cost takes to refill (Refuse): the next
	// refusal is sent after it, so that refused callers come back one
	// after the other, not all at once.
	next time.Time
}

// NewBucket returns a full bucket of rate tokens a second.
func NewBucket(rate float64, now time.Time) *Bucket {
	b := &Bucket{last: now}
	b.SetRate(rate, now)
	b.tokens = b.burst
	return b
}

// SetRate changes the rate (and so the burst), keeping the tokens held up
// to the new burst.
func (b *Bucket) SetRate(rate float64, now time.Time) {
	b.refill(now)
	b.rate, b.burst = rate, max(rate, 1)
	b.tokens = min(b.tokens, b.burst)
}

// Rate returns the bucket's rate in tokens a second.
func (b *Bucket) Rate() float64 { return b.rate }

func (b *Bucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+b.rate*d.Seconds())
		b.last = now
	}
}

// Wait returns 0 when cost may be taken now, else how long until it may:
// until the bucket holds cost tokens, or its burst for a larger cost, or
// (a cost of 0) until its debt is repaid.
func (b *Bucket) Wait(now time.Time, cost float64) time.Duration {
	b.refill(now)
	need := min(cost, b.burst)
	if b.tokens >= need {
		return 0
	}
	if b.rate <= 0 {
		return time.Hour
	}
	secs := (need - b.tokens) / b.rate
	return max(time.Millisecond, time.Duration(math.Ceil(secs*1e3))*time.Millisecond)
}

// MaxSpread bounds how far Refuse spreads refused callers past the
// bucket's own wait: beyond it, callers that were refused and never came
// back would make every later refusal wait longer for nothing.
const MaxSpread = 2 * time.Second

// Refuse returns the delay to give a request of cost that Wait refused
// at now (wait, > 0): at least wait, and after the slots already given
// to earlier refusals, each of which holds the time its cost takes to
// refill. Without it, n callers refused together are all told the same
// delay, come back together, and all but one are refused again: each
// admission then costs n refusals (each a request received and decoded
// for nothing: 16 batch writers made ~15 refusals of 100 KiB per admitted
// MutateRows). A slot is not a reservation: the tokens are taken by
// whoever comes first once they are there.
func (b *Bucket) Refuse(now time.Time, cost float64, wait time.Duration) time.Duration {
	at := now.Add(wait)
	if b.next.After(at) {
		at = b.next
	}
	if limit := now.Add(wait + MaxSpread); at.After(limit) {
		at = limit
	}
	if b.rate > 0 {
		b.next = at.Add(time.Duration(min(cost, b.burst) / b.rate * float64(time.Second)))
	}
	return max(wait, at.Sub(now).Round(time.Millisecond))
}

// Take removes cost tokens (after Wait answered 0 at the same time).
func (b *Bucket) Take(cost float64) { b.tokens -= cost }

// Charge removes cost tokens at now whatever the bucket holds.
func (b *Bucket) Charge(now time.Time, cost float64) {
	b.refill(now)
	b.tokens -= cost
}
