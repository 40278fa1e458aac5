package wal

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/vfs"
)

// OnSync reports each fsync with the group it made durable: here the
// first writer's record alone, then the 63 that queued behind it.
func TestOnSyncReportsGroupSizes(t *testing.T) {
	const writers = 64
	ffs := vfs.NewFaulty(vfs.Default)
	var mu sync.Mutex
	var events []SyncEvent
	l := mustOpen(t, Options{Dir: t.TempDir(), FS: ffs, OnSync: func(e SyncEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	held, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	ffs.Set(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && calls.Add(1) == 1 {
			close(held)
			<-release
		}
		return nil
	})
	payload := []byte("group commit")
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	appendOne := func() { errs <- l.Append(payload) }
	wg.Go(appendOne)
	<-held
	for range writers - 1 {
		wg.Go(appendOne)
	}
	for queued := uint64(0); queued < writers; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		queued = l.appended
		l.mu.Unlock()
	}
	close(release)
	wg.Wait()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0].Records != 1 || events[1].Records != writers-1 {
		t.Fatalf("sync events %+v, want two: 1 record, then %d", events, writers-1)
	}
	rec := frameHeaderLen + len(payload)
	if events[0].Bytes != rec || events[1].Bytes != (writers-1)*rec || events[0].Duration <= 0 {
		t.Fatalf("sync events %+v: want %d and %d bytes and a duration", events, rec, (writers-1)*rec)
	}
}
