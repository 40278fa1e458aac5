package tablet_test

import (
	"context"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// Every flush and compaction is reported to Events with what it did.
func TestEventsReportFlushesAndCompactions(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var flushes []tablet.FlushEvent
	var comps []tablet.CompactionEvent
	tb, err := tablet.Open(tablet.Options{
		Dir: t.TempDir(), Create: true, DisableBackgroundWork: true,
		Families: []families.Family{{Name: "cf", MaxVersions: 1}},
		Events: &tablet.Events{
			Flushed:   func(e tablet.FlushEvent) { mu.Lock(); flushes = append(flushes, e); mu.Unlock() },
			Compacted: func(e tablet.CompactionEvent) { mu.Lock(); comps = append(comps, e); mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for round := range 2 {
		for i := range 50 {
			err := tb.Apply(ctx, []byte{'r', byte(i)}, []cell.Mutation{{Kind: cell.SetCell, Family: "cf",
				Qualifier: []byte("q"), Timestamp: int64(round + 1), Value: make([]byte, 100)}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := tb.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(flushes) != 2 {
		t.Fatalf("%d flush events, want 2", len(flushes))
	}
	for _, f := range flushes {
		if f.Files != 1 || f.Bytes == 0 || f.MemtableBytes < 50*100 || f.Duration <= 0 {
			t.Errorf("flush event %+v: want 1 file, bytes, the memtable's bytes and a duration", f)
		}
	}
	if len(comps) != 1 {
		t.Fatalf("%d compaction events, want 1", len(comps))
	}
	c := comps[0]
	if c.Family != "cf" || !c.Major || c.Inputs != 2 || c.BytesIn != flushes[0].Bytes+flushes[1].Bytes || c.BytesOut == 0 || c.BytesOut >= c.BytesIn {
		t.Errorf("compaction event %+v: want family cf, major, 2 inputs of the flushed bytes, fewer bytes out (one version kept)", c)
	}
}
