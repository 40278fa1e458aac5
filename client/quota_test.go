package client

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

func quotaRefusal(t *testing.T, d time.Duration) error {
	t.Helper()
	st, err := status.New(codes.ResourceExhausted, "quota: table t is over its write_requests quota").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// A quota refusal (RESOURCE_EXHAUSTED with RetryInfo) is retried for
// every call, idempotent or not; other RESOURCE_EXHAUSTED answers only
// for idempotent ones.
func TestQuotaRefusalIsRetriedForEveryCall(t *testing.T) {
	if retry, evict := serverError(quotaRefusal(t, time.Second), false); !retry || evict {
		t.Fatalf("a quota refusal of a non-idempotent call: retry %v, evict %v; want a retry at the same server", retry, evict)
	}
	if retry, _ := serverError(status.Error(codes.ResourceExhausted, "memtables full"), false); retry {
		t.Fatal("a RESOURCE_EXHAUSTED without RetryInfo was retried for a non-idempotent call")
	}
}

// The retrier waits the refusal's delay (not its backoff); a caller
// whose deadline comes before the delay ends gets the refusal at once.
func TestRetrierWaitsTheRetryDelayWithinTheDeadline(t *testing.T) {
	var slept []time.Duration
	c := &Client{opts: Options{RetryTimeout: time.Minute},
		backoff: func(context.Context, int) error { t.Fatal("backoff used for a quota refusal"); return nil },
		sleep: func(_ context.Context, d time.Duration) error {
			slept = append(slept, d)
			return nil
		}}
	refusal := quotaRefusal(t, 1500*time.Millisecond)
	if err := c.newRetrier().wait(context.Background(), refusal); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if len(slept) != 1 || slept[0] != 1500*time.Millisecond {
		t.Fatalf("slept %v, want the 1.5s RetryInfo delay", slept)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := c.newRetrier().wait(ctx, quotaRefusal(t, 2*time.Hour)); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a delay past the deadline: %v, want the refusal at once", err)
	}
	if len(slept) != 1 {
		t.Fatalf("slept %v for a delay past the deadline", slept)
	}
}
