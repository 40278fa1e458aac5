package eventlog

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestHandlerKeepsEventsAndPassesEverything: every record reaches the
// wrapped handler; only those with an "event" attribute (in the record or
// the logger's With) are kept, with table and tablet picked out.
func TestHandlerKeepsEventsAndPassesEverything(t *testing.T) {
	var out bytes.Buffer
	r := NewRing(8)
	log := Logger(slog.New(slog.NewTextHandler(&out, nil)), r)
	log.Info("routine chatter", "n", 1)
	log.With("component", "tabletserver", "tablet", "users/t-1").Info("flushed", Key, "flush", "bytes", 42)
	log.With(Key, "leader").Info("elected leader", "key", "k")
	log.Debug("below the level", Key, "flush") // not enabled: neither logged nor kept
	quiet := Logger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelWarn})), r)
	quiet.Info("compacted", Key, "compaction") // kept though not logged
	if n := strings.Count(out.String(), "\n"); n != 3 {
		t.Fatalf("wrapped handler got %d lines, want 3:\n%s", n, out.String())
	}
	es := r.Since(time.Time{})
	if len(es) != 3 || es[2].Kind != "compaction" {
		t.Fatalf("kept %d events, want 3 (the last a compaction): %+v", len(es), es)
	}
	f := es[0]
	if f.Kind != "flush" || f.Table != "users" || f.Tablet != "t-1" || f.Message != "flushed" {
		t.Errorf("flush event = %+v", f)
	}
	if fmt.Sprint(f.Attrs) != "[{component tabletserver} {bytes 42}]" {
		t.Errorf("flush attrs = %v", f.Attrs)
	}
	if es[1].Kind != "leader" || es[1].Message != "elected leader" {
		t.Errorf("leader event = %+v", es[1])
	}
}

// TestRingKeepsTheLastN: a ring of 3 keeps the last 3 events, oldest
// first, and Since filters by time.
func TestRingKeepsTheLastN(t *testing.T) {
	r := NewRing(3)
	base := time.Unix(1000, 0)
	for i := range 5 {
		r.Add(Event{Time: base.Add(time.Duration(i) * time.Second), Kind: fmt.Sprint(i)})
	}
	var kinds []string
	for _, e := range r.Since(time.Time{}) {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "2,3,4" {
		t.Errorf("kept %s, want 2,3,4", got)
	}
	if got := r.Since(base.Add(4 * time.Second)); len(got) != 1 || got[0].Kind != "4" {
		t.Errorf("Since(t4) = %+v, want event 4 only", got)
	}
}
