package master

import (
	"context"
	"sync"
	"time"
)

// termLoop runs round on its own goroutine every interval, and at once
// whenever kick fires (nil: never), until term ends; wg tracks the
// goroutine so the term ends only after it stops. interval <= 0 runs
// nothing. The leader's background work runs this way: load reports,
// balancing, automatic merges and the sweep of tablet folders.
func termLoop(wg *sync.WaitGroup, term *leadership, interval time.Duration, kick <-chan struct{}, round func(context.Context)) {
	if interval <= 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-term.ctx.Done():
				return
			case <-ticker.C:
			case <-kick:
			}
			round(term.ctx)
		}
	}()
}
