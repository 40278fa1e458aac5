package locator

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with full jitter.
type Backoff struct {
	// Initial is the first delay's upper bound. The default is 20ms.
	Initial time.Duration
	// Max caps every delay. The default is 2s.
	Max time.Duration
	// Multiplier grows the bound after each attempt. The default is 2.
	Multiplier float64
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 20 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 2 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Multiplier < 1 {
		b.Multiplier = 2
	}
	return b
}

// Delay returns the delay before retry number attempt (0 for the first
// retry): a random duration between half the bound and the bound, where
// the bound is Initial·Multiplier^attempt capped at Max.
func (b Backoff) Delay(attempt int) time.Duration {
	b = b.withDefaults()
	bound := float64(b.Initial)
	for i := 0; i < attempt && bound < float64(b.Max); i++ {
		bound *= b.Multiplier
	}
	if bound > float64(b.Max) {
		bound = float64(b.Max)
	}
	half := bound / 2
	return time.Duration(half + rand.Float64()*half)
}

// Wait sleeps for Delay(attempt), returning ctx's error if it ends first.
func (b Backoff) Wait(ctx context.Context, attempt int) error {
	t := time.NewTimer(b.Delay(attempt))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
