package tablet

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The budget counts writers it throttles (over soft) and rejects (over
// hard), for the server's metrics.
func TestBudgetCountsThrottledAndRejectedWrites(t *testing.T) {
	b := NewMemoryBudget(100, 1000)
	b.SetMaxStall(time.Millisecond)
	ctx := context.Background()
	if err := b.admit(ctx); err != nil || b.Throttled() != 0 || b.Rejected() != 0 {
		t.Fatalf("under soft: err %v, throttled %d, rejected %d", err, b.Throttled(), b.Rejected())
	}
	b.charge(500)
	if err := b.admit(ctx); err != nil || b.Throttled() != 1 || b.Rejected() != 0 {
		t.Fatalf("over soft: err %v, throttled %d, rejected %d; want nil, 1, 0", err, b.Throttled(), b.Rejected())
	}
	b.charge(1000)
	if err := b.admit(ctx); !errors.Is(err, ErrResourceExhausted) || b.Throttled() != 1 || b.Rejected() != 1 {
		t.Fatalf("over hard: err %v, throttled %d, rejected %d; want ErrResourceExhausted, 1, 1", err, b.Throttled(), b.Rejected())
	}
	if soft, hard := b.Limits(); soft != 100 || hard != 1000 {
		t.Fatalf("Limits = %d, %d", soft, hard)
	}
}
