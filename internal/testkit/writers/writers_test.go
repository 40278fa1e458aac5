package writers

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every writer writes in order until Stop; what each acknowledged is
// kept per writer, in order; a writer that returns false stops alone.
func TestWritersWriteUntilStop(t *testing.T) {
	third := make(chan struct{})
	ws := Start(t, 3, func(w *Writer, i int) bool {
		if w.N == 2 { // writer 2 acknowledges two rows, then gives up
			if i == 2 {
				close(third)
				return false
			}
		}
		w.Ack(fmt.Sprintf("w%d/%d", w.N, i))
		return true
	})
	<-third
	for ws.Count() < 100 { // the other two write on: wait for some of it
		runtime.Gosched()
	}
	if ws.Stopping() {
		t.Fatal("Stopping before Stop")
	}
	ws.Stop()
	stopped := ws.Count()
	ws.Stop() // a second Stop returns at once
	acked := ws.Acked()
	if n := ws.Count(); n != len(acked[0])+len(acked[1])+len(acked[2]) {
		t.Errorf("Count = %d, Acked holds %d+%d+%d", n, len(acked[0]), len(acked[1]), len(acked[2]))
	}
	if !slices.Equal(acked[2], []string{"w2/0", "w2/1"}) {
		t.Errorf("writer 2 acknowledged %v, want w2/0 w2/1", acked[2])
	}
	for w, rows := range acked[:2] {
		for i, row := range rows {
			if want := fmt.Sprintf("w%d/%d", w, i); row != want {
				t.Fatalf("writer %d's ack %d is %s, want %s", w, i, row, want)
			}
		}
	}
	if ws.Count() != stopped || !ws.Stopping() {
		t.Error("writers went on after Stop")
	}
}
