package sharedlog

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/wal"
)

// TestBufferedDetachSyncs: under sync=buffered a tablet's acknowledged
// records may still be in the log's buffer; an unclean Detach (the tablet
// leaves records for its next owner) writes and syncs them, so the
// segment files, which the next owner reads, hold every tablet's records
// in write order while the log is still open.
func TestBufferedDetachSyncs(t *testing.T) {
	root := t.TempDir()
	w := mustOpen(t, Options{Root: root, Name: "w", SegmentSize: smallSegments, SyncMode: wal.SyncBuffered})
	keys := []pinKey{{"users/1", 3}, {"users/2", 5}, {"orders/7", 1}}
	const total = 200
	var wg sync.WaitGroup
	hs := map[pinKey]*Handle{}
	for _, k := range keys {
		h := w.Attach(k.tablet, k.epoch)
		hs[k] = h
		wg.Go(func() { writeAll(t, h, payloads(k, 0, total)) })
	}
	wg.Wait()
	for _, k := range keys {
		if err := hs[k].Detach(false); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := segmentsOf(t, root, "w")
	for _, k := range keys {
		checkRecords(t, fmt.Sprintf("segment files after Detach, %v", k), recs[k], payloads(k, 0, total))
		checkRecords(t, fmt.Sprintf("replay of %v", k), mustReplay(t, w, "w", k, 0), payloads(k, 0, total))
	}
}
