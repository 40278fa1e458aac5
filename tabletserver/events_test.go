package tabletserver

import (
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TestServerStatsReportsEvents: a flush is an event of the server, named
// with its table and tablet; ServerStats hands it on, and not again when
// asked only for later events.
func TestServerStatsReportsEvents(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	if err := put(e.ctx, c, ref, "row", set("cf", "q", 1, "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var flush *tabulapb.ServerEvent
	for _, ev := range resp.GetEvents() {
		if ev.GetKind() == "flush" {
			flush = ev
		}
	}
	if flush == nil || flush.GetTable() != ref.GetTable() || flush.GetTablet() != ref.GetTabletId() ||
		flush.GetMessage() != "flushed" || flush.GetAttrs()["files"] == "" {
		t.Fatalf("no flush event of %s/%s among %v", ref.GetTable(), ref.GetTabletId(), resp.GetEvents())
	}
	later, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{EventsSinceMicros: flush.GetTimeMicros() + 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range later.GetEvents() {
		if ev.GetKind() == "flush" {
			t.Fatalf("the flush again after its time: %v", ev)
		}
	}
	if got := srv.Events(); len(got) == 0 || got[len(got)-1].Time.After(time.Now()) {
		t.Fatalf("Events() = %+v", got)
	}
}
