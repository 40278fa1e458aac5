package meta

import (
	"context"
	"testing"
)

// A MapWatcher on a store's own watcher (the twin's) leaves the store
// open when it closes: the master's index closes its watcher on every
// Close, and the store is shared by every master and server of a test.
func TestMapWatcherCloseLeavesTheStoreOpen(t *testing.T) {
	s := newTwin(t)
	mw := NewMapWatcher(s, NewLayout("test"))
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), "k", "v"); err != nil {
		t.Fatalf("Put after the MapWatcher's Close: %v, want the store open", err)
	}
}
