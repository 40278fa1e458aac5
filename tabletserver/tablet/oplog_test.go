package tablet

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFlushesAndCompactionsAreLoggedAtInfo: an operator at the info level
// sees one line per flush and per compaction, with sizes and durations.
func TestFlushesAndCompactionsAreLoggedAtInfo(t *testing.T) {
	var out syncBuffer
	opts := testOptions(t.TempDir())
	opts.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	tb := openTablet(t, opts)
	for i := 0; i < 2; i++ {
		apply(t, tb, "row", set("a", "q", int64(i+1), "value"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	var flushed, compacted int
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.Contains(line, "msg=flushed"):
			flushed++
			for _, f := range []string{"level=INFO", "memtable_bytes=", "files=1", "bytes=", "duration="} {
				if !strings.Contains(line, f) {
					t.Errorf("flush line lacks %q: %s", f, line)
				}
			}
		case strings.Contains(line, "msg=compacted"):
			compacted++
			for _, f := range []string{"level=INFO", "family=a", "major=true", "inputs=2", "bytes_in=", "bytes_out=", "duration="} {
				if !strings.Contains(line, f) {
					t.Errorf("compaction line lacks %q: %s", f, line)
				}
			}
		}
	}
	if flushed != 2 || compacted != 1 {
		t.Errorf("%d flush lines and %d compaction lines, want 2 and 1:\n%s", flushed, compacted, out.String())
	}
}
