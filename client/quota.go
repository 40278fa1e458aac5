package client

import (
	"context"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// retryDelay returns the delay of a quota refusal (docs/CONTRACTS.md
// "Quotas"): RESOURCE_EXHAUSTED with a google.rpc.RetryInfo detail. A
// tablet server gives that detail only to a request it refused before
// applying any of it, so every kind of request may be sent again after
// the delay, idempotent or not.
func retryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// waitRetryDelay sleeps d before an attempt refused by a quota, unless
// ctx's deadline comes first: then it returns at once with the refusal
// (waiting could only end in DEADLINE_EXCEEDED, which says less).
func (c *Client) waitRetryDelay(ctx context.Context, d time.Duration, refusal error) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return refusal
	}
	return c.sleep(ctx, d)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
