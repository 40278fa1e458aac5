package tabletserver

import (
	"sync"
	"testing"
	"testing/synctest"
)

// TestRowWorkersAreKept: a row run after another has finished runs on the
// same worker, not a new goroutine; rows beyond max at once run on
// goroutines of their own, and every row runs; after stop rows still run,
// and no worker is left.
func TestRowWorkersAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newRowWorkers(3)
		ran := 0
		for range 5 {
			w.run(func() { ran++ })
			synctest.Wait() // the row has run and its worker waits for more
		}
		if ran != 5 || w.n != 1 {
			t.Fatalf("5 rows one after another: %d ran on %d workers, want 5 on 1", ran, w.n)
		}

		// Six rows at once, each held until release: three run on
		// workers (the one idle and two new), three on goroutines of
		// their own.
		release := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(6)
		for range 6 {
			w.run(func() { <-release; wg.Done() })
		}
		synctest.Wait()
		if w.n != 3 {
			t.Fatalf("6 rows at once with at most 3 workers: %d workers, want 3", w.n)
		}
		close(release)
		wg.Wait()

		w.stop()
		done := make(chan struct{})
		w.run(func() { close(done) })
		<-done
		w.stop() // a second stop does nothing
		var none *rowWorkers
		ran2 := make(chan struct{})
		none.run(func() { close(ran2) })
		<-ran2
		// synctest.Test fails if a goroutine of the bubble is left
		// blocked: stop ended every worker.
	})
}
