package locator

import (
	"context"
	"errors"
	"sync"
)

// flight makes concurrent lookups of one key share a single call.
type flight struct {
	// mu protects calls.
	mu    sync.Mutex
	calls map[string]*call
}

type call struct {
	done    chan struct{}
	tablets []Tablet
	err     error
}

// do runs fn once for all concurrent callers with the same key. fn runs
// under the first caller's context; a caller whose own context is still
// live when that context ends retries (becoming the runner itself), so one
// caller giving up never fails the others. Likewise a refusal of the
// runner's credentials (UNAUTHENTICATED, PERMISSION_DENIED) is the
// runner's own: callers of a client that calls for many principals
// (client.WithToken, the Bigtable gateway) share lookups, and a waiter
// retries under its own credentials rather than take another's refusal.
func (f *flight) do(ctx context.Context, key string, fn func(context.Context) ([]Tablet, error)) ([]Tablet, error) {
	for {
		f.mu.Lock()
		if f.calls == nil {
			f.calls = make(map[string]*call)
		}
		c, ok := f.calls[key]
		if !ok {
			c = &call{done: make(chan struct{})}
			f.calls[key] = c
			f.mu.Unlock()
			c.tablets, c.err = fn(ctx)
			f.mu.Lock()
			delete(f.calls, key)
			f.mu.Unlock()
			close(c.done)
			return c.tablets, c.err
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
		}
		if c.err != nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded) ||
			isContextStatus(c.err) || isAuthStatus(c.err)) && ctx.Err() == nil {
			continue
		}
		return c.tablets, c.err
	}
}
