// Package writers runs a test's background load: n goroutines that each
// write, one write after another, until the test says stop, and keep the
// rows each had acknowledged:
//
//	ws := writers.Start(t, 4, func(w *writers.Writer, i int) bool {
//		row := fmt.Sprintf("w%d/%05d", w.N, i)
//		if err := tbl.Apply(ctx, []byte(row), m); err != nil {
//			t.Errorf("writing %s: %v", row, err)
//			return false // this writer stops
//		}
//		w.Ack(row)
//		return true
//	})
//	… split, move, kill while they write …
//	ws.Stop()
//	for _, rows := range ws.Acked() { … every one must read back … }
//
// What a write is, and what counts as acknowledged, is the test's: the
// package owns only the goroutines (started together, stopped and waited
// for by Stop, and by t.Cleanup if the test ends first) and the record.
// Part of internal/testkit: tests only.
package writers

import (
	"sync"
	"testing"
)

// Writers is a running set of writers.
type Writers struct {
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	// mu protects acked.
	mu    sync.Mutex
	acked [][]string // by writer, in the order acknowledged
}

// A Writer is one of the goroutines, as its write function sees it.
type Writer struct {
	// N is the writer's number, from 0 to n-1.
	N  int
	ws *Writers
}

// Start starts n writers. Writer w calls write(w, i) for i = 0, 1, 2, …
// until Stop is called or write returns false; Stop takes effect between
// two writes, never inside one. t.Cleanup calls Stop.
func Start(t testing.TB, n int, write func(w *Writer, i int) bool) *Writers {
	ws := &Writers{stop: make(chan struct{}), acked: make([][]string, n)}
	t.Cleanup(ws.Stop)
	for i := range n {
		w := &Writer{N: i, ws: ws}
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			for i := 0; !ws.Stopping(); i++ {
				if !write(w, i) {
					return
				}
			}
		}()
	}
	return ws
}

// Ack records rows as acknowledged to this writer.
func (w *Writer) Ack(rows ...string) {
	w.ws.mu.Lock()
	defer w.ws.mu.Unlock()
	w.ws.acked[w.N] = append(w.ws.acked[w.N], rows...)
}

// Stopping reports whether Stop was called: an error a write meets then
// may be the test tearing down, not a fault.
func (w *Writer) Stopping() bool { return w.ws.Stopping() }

// Stopping reports whether Stop was called.
func (ws *Writers) Stopping() bool {
	select {
	case <-ws.stop:
		return true
	default:
		return false
	}
}

// Stop tells the writers to stop and waits until they have. It may be
// called more than once, and from any goroutine but a writer's.
func (ws *Writers) Stop() {
	ws.stopOnce.Do(func() { close(ws.stop) })
	ws.wg.Wait()
}

// Acked returns, per writer, the rows acknowledged so far, in order.
func (ws *Writers) Acked() [][]string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make([][]string, len(ws.acked))
	for i, rows := range ws.acked {
		out[i] = append([]string(nil), rows...)
	}
	return out
}

// Count returns how many rows were acknowledged so far, by all writers.
func (ws *Writers) Count() int {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	n := 0
	for _, rows := range ws.acked {
		n += len(rows)
	}
	return n
}
