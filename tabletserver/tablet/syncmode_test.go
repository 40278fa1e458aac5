package tablet

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/wal"
)

// TestSyncBufferedReplaysAfterClose: a tablet whose log acknowledges
// writes from its buffer (sync=buffered) still holds every write after a
// clean Close and reopen: Close drains the buffer, and the memtable's
// records come back from the log.
func TestSyncBufferedReplaysAfterClose(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SyncMode = wal.SyncBuffered
	tb := openTablet(t, opts)
	const rows = 500
	for i := range rows {
		if err := tb.Apply(bg, fmt.Appendf(nil, "row%04d", i), []cell.Mutation{set("a", "q", 1, fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	want := scan(t, tb, ReadOptions{})
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Create = false
	tb = openTablet(t, opts)
	if got := scan(t, tb, ReadOptions{}); got != want {
		t.Fatalf("after reopen:\n%s\nwant:\n%s", got, want)
	}
}

func TestUnknownSyncModeRefused(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.SyncMode = wal.SyncBuffered + 1
	if _, err := Open(opts); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("Open with sync mode %d: %v, want cell.ErrInvalid", opts.SyncMode, err)
	}
}
