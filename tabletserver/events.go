package tabletserver

import (
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
)

// The server's logger keeps its events (records with an "event"
// attribute: flushes, compactions, splits, loads...) in a ring; ServerStats
// hands them to the master, which shows them on its status page, and the
// server's own status page shows them (docs/OPERATIONS.md "Status page").

// Events returns the server's recent events, oldest first.
func (s *Server) Events() []eventlog.Event { return s.events.Since(time.Time{}) }

func eventProtos(es []eventlog.Event) []*tabulapb.ServerEvent {
	out := make([]*tabulapb.ServerEvent, len(es))
	for i, e := range es {
		p := &tabulapb.ServerEvent{TimeMicros: e.Time.UnixMicro(), Kind: e.Kind, Table: e.Table, Tablet: e.Tablet, Message: e.Message}
		if len(e.Attrs) > 0 {
			p.Attrs = make(map[string]string, len(e.Attrs))
			for _, a := range e.Attrs {
				p.Attrs[a.Key] = a.Value
			}
		}
		out[i] = p
	}
	return out
}
