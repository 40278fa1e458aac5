package statuspage

import (
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/opshttp"
	"github.com/tabuladb/tabula/quota"
	"github.com/tabuladb/tabula/tabletserver"
)

// ServerPage is a tablet server's own page: its tablets with their size
// and load (its last closed load window) and its recent events.
type ServerPage struct {
	s    *tabletserver.Server
	home string // the master's status page, "" when not known
}

// NewServerPage returns the page of s. home, when set, links the
// master's status page (in `tabula dev`, "/").
func NewServerPage(s *tabletserver.Server, home string) *ServerPage {
	return &ServerPage{s: s, home: home}
}

// Routes serves the page at prefix ("/" on the server's own port,
// "/servers/<id>/" in `tabula dev`).
func (p *ServerPage) Routes(prefix string) []opshttp.Route {
	return []opshttp.Route{{Pattern: "GET " + prefix + "{$}", Handler: p}}
}

type serverTablet struct {
	Table, ID, Start, End                string
	Size, Memtable                       int64
	SSTables                             int32
	Backlog                              int64
	Reads, Writes, ReadBytes, WriteBytes float64
	Busy                                 float64
}

func (p *ServerPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	stats, err := p.s.ServerStats(r.Context(), &tabulapb.ServerStatsRequest{EventsSinceMicros: time.Now().UnixMicro()})
	data := struct {
		Title, ID, Addr, Home, Err string
		Serving                    bool
		Window                     time.Time
		Tablets                    []serverTablet
		Total                      serverTablet
		Events                     []eventRow
		Quotas                     []quota.Info
	}{Title: "Tablet server " + p.s.ID(), ID: p.s.ID(), Addr: p.s.Addr(), Home: p.home, Quotas: p.s.Quotas()}
	if err != nil {
		data.Err = err.Error()
	} else {
		data.Serving = stats.GetServing()
		if us := stats.GetLoadWindowEndMicros(); us > 0 {
			data.Window = time.UnixMicro(us)
		}
		for _, t := range stats.GetTablets() {
			st := serverTablet{Table: t.GetTablet().GetTable(), ID: t.GetTablet().GetTabletId(),
				Start: keyText(string(t.GetStartKey()), "-inf"), End: keyText(string(t.GetEndKey()), "+inf"),
				Size: t.GetSizeBytes(), Memtable: t.GetMemtableBytes(), SSTables: t.GetSstables(), Backlog: t.GetCompactionBacklog(),
				Reads: t.GetReadsPerSec(), Writes: t.GetWritesPerSec(), ReadBytes: t.GetReadBytesPerSec(), WriteBytes: t.GetWriteBytesPerSec(),
				Busy: t.GetBusyShare()}
			data.Tablets = append(data.Tablets, st)
			tot := &data.Total
			tot.Size, tot.Memtable, tot.SSTables = tot.Size+st.Size, tot.Memtable+st.Memtable, tot.SSTables+st.SSTables
			tot.Reads, tot.Writes, tot.Busy = tot.Reads+st.Reads, tot.Writes+st.Writes, tot.Busy+st.Busy
		}
		sort.SliceStable(data.Tablets, func(i, j int) bool {
			return data.Tablets[i].Reads+data.Tablets[i].Writes > data.Tablets[j].Reads+data.Tablets[j].Writes
		})
	}
	es := p.s.Events()
	slices.Reverse(es)
	for _, e := range es[:min(200, len(es))] {
		data.Events = append(data.Events, eventRowOf(p.s.ID(), e))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	pages.ExecuteTemplate(w, "server.html", data) // a failed write is the client's problem
}

func eventRowOf(source string, e eventlog.Event) eventRow {
	r := eventRow{Time: e.Time, Source: source, Kind: e.Kind, Table: e.Table, Tablet: e.Tablet, Message: e.Message}
	for _, a := range e.Attrs {
		r.Attrs += a.Key + "=" + a.Value + " "
	}
	return r
}
