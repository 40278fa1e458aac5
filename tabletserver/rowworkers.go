package tabletserver

import "sync"

// rowWorkers runs MutateRows' rows on goroutines kept from call to call.
// A row's write runs deep (the handler, the tablet's commit path, the
// batch's encoding and sort), and a goroutine starts with a small stack:
// on a new goroutine per row, about a sixth of the CPU of batched writes
// went to growing stacks (runtime.newstack, copystack; docs/BENCHMARKS.md
// "Batched writes on kept goroutines"). A kept worker's stack has grown
// already. Workers are started as rows need them, up to max; past that a
// row runs on a goroutine of its own, as before, so the workers bound
// nothing. They end with the server. A nil *rowWorkers has none.
type rowWorkers struct {
	work chan func()
	quit chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex // guards n and stopped (and wg.Add against stop's Wait)
	n, max  int
	stopped bool
}

// maxRowWorkers is how many workers a server keeps at most: enough for
// eight MutateRows calls at their full parallelism. An idle one costs its
// stack, which the collector shrinks while it idles.
const maxRowWorkers = 8 * mutateRowsParallelism

func newRowWorkers(max int) *rowWorkers {
	return &rowWorkers{work: make(chan func()), quit: make(chan struct{}), max: max}
}

// run runs f on an idle worker, else on a new worker while there are
// fewer than max, else on a goroutine of its own.
func (w *rowWorkers) run(f func()) {
	if w == nil {
		go f()
		return
	}
	select {
	case w.work <- f:
		return
	default:
	}
	w.mu.Lock()
	if w.stopped || w.n >= w.max {
		w.mu.Unlock()
		go f()
		return
	}
	w.n++
	w.wg.Add(1)
	w.mu.Unlock()
	go w.loop(f)
}

// loop runs first, then whatever run hands it, until stop.
func (w *rowWorkers) loop(first func()) {
	defer w.wg.Done()
	first()
	for {
		select {
		case f := <-w.work:
			f()
		case <-w.quit:
			return
		}
	}
}

// stop ends the workers once they finish what they run; rows run after it
// get goroutines of their own.
func (w *rowWorkers) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	w.mu.Unlock()
	close(w.quit)
	w.wg.Wait()
}
