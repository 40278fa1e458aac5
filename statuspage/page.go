package statuspage

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/tabuladb/tabula/api/convert"
	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/opshttp"
)

//go:embed templates/*.html
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"key":   func(b []byte, empty string) string { return keyText(string(b), empty) },
	"num":   number,
	"bytes": bytesText,
	"pct":   func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"when":  func(t time.Time) string { return t.Format("15:04:05") },
	"int64": func(n int) int64 { return int64(n) },
	"mul":   func(a, b int) int { return a * b },
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return time.Since(t).Round(time.Second).String() + " ago"
	},
}).ParseFS(templateFS, "templates/*.html"))

// Options configure a master's status page.
type Options struct {
	// ServerURL links a tablet server's own page (from its id and gRPC
	// address); nil or "" links nothing.
	ServerURL func(id, addr string) string
	// Heatmap bounds the heatmap history.
	Heatmap HeatmapOptions
	// Events is how many tablet server events the page keeps (they come
	// with the load reports): eventlog.DefaultSize by default.
	Events int
	// Logger receives template errors. The default discards them.
	Logger *slog.Logger
}

// Master is what the page reads of a master; *master.Master is one.
type Master interface {
	Addr() string
	Leader(ctx context.Context) string
	IsLeader() bool
	Loads() *master.LoadReport
	OnLoadReport(fn func(*master.LoadReport))
	Events() []eventlog.Event
	ListServers(context.Context, *tabulapb.ListServersRequest) (*tabulapb.ListServersResponse, error)
	ListTables(context.Context, *tabulapb.ListTablesRequest) (*tabulapb.ListTablesResponse, error)
	ListTablets(context.Context, *tabulapb.ListTabletsRequest) (*tabulapb.ListTabletsResponse, error)
}

// Page is a master's status page. Create it with New, which subscribes it
// to the master's load reports, before the master leads for the heatmap
// to start at its first report.
type Page struct {
	m      Master
	opts   Options
	heat   *Heatmaps
	events *eventlog.Ring // the tablet servers' events, from the reports
	log    *slog.Logger
}

// New returns the status page of m and subscribes it to m's load reports.
func New(m Master, opts Options) *Page {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Page{m: m, opts: opts, heat: NewHeatmaps(opts.Heatmap), events: eventlog.NewRing(opts.Events), log: opts.Logger}
	m.OnLoadReport(p.observe)
	return p
}

func (p *Page) observe(rep *master.LoadReport) {
	p.heat.Observe(rep)
	for _, id := range slices.Sorted(mapKeys(rep.Servers)) {
		for _, e := range rep.Servers[id].Events {
			e.Attrs = append([]eventlog.Attr{{Key: "server", Value: id}}, e.Attrs...)
			p.events.Add(e)
		}
	}
}

// Heatmaps returns the page's heatmap history.
func (p *Page) Heatmaps() *Heatmaps { return p.heat }

// Routes are the page's endpoints, for opshttp.Serve.
func (p *Page) Routes() []opshttp.Route {
	return []opshttp.Route{
		{Pattern: "GET /{$}", Handler: http.HandlerFunc(p.summary)},
		{Pattern: "GET /servers", Handler: http.HandlerFunc(p.servers)},
		{Pattern: "GET /tables", Handler: http.HandlerFunc(p.tables)},
		{Pattern: "GET /tables/{table}", Handler: http.HandlerFunc(p.table)},
		{Pattern: "GET /events", Handler: http.HandlerFunc(p.eventsPage)},
		{Pattern: "GET /backups", Handler: http.HandlerFunc(p.backups)},
	}
}

// base is what every page shows on top.
type base struct {
	Title    string
	Master   string
	Leader   string
	IsLeader bool
	Report   time.Time
	Summary  summary
	Err      string
}

type summary struct {
	Servers, Down   int
	Tables, Tablets int
	Size            int64
	Reads, Writes   float64
}

type serverRow struct {
	ID, Address, URL string
	Tablets          int
	Size             int64
	SSTables         int
	Reads, Writes    float64
	Busy             float64
	Err              string
}

type tableRow struct {
	Name, State string
	Families    []familyRow
	Split       int64
	Tablets     int
	Size        int64
	Reads       float64
	Writes      float64
	Bytes       float64
}

type familyRow struct {
	Name, GC, Compression, Bloom, Type string
	BlockSize                          int
	InMemory                           bool
	Size                               int64
}

type tabletRow struct {
	ID, Start, End, Server, ServerURL, State string
	Epoch                                    int64
	Size                                     int64
	SSTables                                 int32
	Reads, Writes, ReadBytes, WriteBytes     float64
	Busy                                     float64
	Reported                                 bool
}

type eventRow struct {
	Time                                 time.Time
	Source, Kind, Table, Tablet, Message string
	Attrs                                string
}

func (p *Page) base(ctx context.Context, title string) base {
	b := base{Title: title, Master: p.m.Addr(), Leader: p.m.Leader(ctx), IsLeader: p.m.IsLeader()}
	rep := p.m.Loads()
	if rep != nil && b.IsLeader {
		b.Report = rep.At
		for _, s := range rep.Servers {
			if s.Err != "" {
				b.Summary.Down++
			}
			b.Summary.Tablets += s.Tablets
			b.Summary.Size += s.SizeBytes
			b.Summary.Reads += s.ReadsPerSec
			b.Summary.Writes += s.WritesPerSec
		}
	}
	if sv, err := p.m.ListServers(ctx, &tabulapb.ListServersRequest{}); err == nil {
		b.Summary.Servers = len(sv.GetServers())
		if rep == nil || !b.IsLeader {
			for _, s := range sv.GetServers() {
				b.Summary.Tablets += int(s.GetTablets())
			}
		}
	} else {
		b.Err = err.Error()
	}
	if ts, err := p.m.ListTables(ctx, &tabulapb.ListTablesRequest{}); err == nil {
		b.Summary.Tables = len(ts.GetTables())
	}
	return b
}

func (p *Page) serverRows(ctx context.Context) ([]serverRow, error) {
	sv, err := p.m.ListServers(ctx, &tabulapb.ListServersRequest{})
	if err != nil {
		return nil, err
	}
	rep := p.m.Loads()
	var out []serverRow
	for _, s := range sv.GetServers() {
		r := serverRow{ID: s.GetId(), Address: s.GetAddress(), URL: p.serverURL(s.GetId(), s.GetAddress()), Tablets: int(s.GetTablets()),
			Size: s.GetSizeBytes(), SSTables: int(s.GetSstables()), Reads: s.GetReadsPerSec(), Writes: s.GetWritesPerSec(), Busy: s.GetBusyShare()}
		if rep != nil && p.m.IsLeader() {
			if l, ok := rep.Servers[s.GetId()]; ok && l.Err != "" {
				r.Err = l.Err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *Page) serverURL(id, addr string) string {
	if p.opts.ServerURL == nil {
		return ""
	}
	return p.opts.ServerURL(id, addr)
}

func (p *Page) tableRows(ctx context.Context) ([]tableRow, error) {
	ts, err := p.m.ListTables(ctx, &tabulapb.ListTablesRequest{})
	if err != nil {
		return nil, err
	}
	loads := map[string]*tableRow{}
	famSize := map[string]map[string]int64{}
	if rep := p.m.Loads(); rep != nil && p.m.IsLeader() {
		for _, t := range rep.Tablets {
			r := loads[t.Table]
			if r == nil {
				r = &tableRow{}
				loads[t.Table] = r
				famSize[t.Table] = map[string]int64{}
			}
			r.Tablets++
			r.Size += t.SizeBytes
			r.Reads += t.ReadsPerSec
			r.Writes += t.WritesPerSec
			r.Bytes += t.ReadBytesPerSec + t.WriteBytesPerSec
			for f, n := range t.FamilyBytes {
				famSize[t.Table][f] += n
			}
		}
	}
	var out []tableRow
	for _, s := range ts.GetTables() {
		r := tableRow{}
		if l := loads[s.GetName()]; l != nil {
			r = *l
		}
		r.Name, r.State, r.Split = s.GetName(), s.GetState(), s.GetSplitThresholdBytes()
		fams, err := convert.FamiliesFromProto(s.GetFamilies())
		if err != nil {
			return nil, fmt.Errorf("statuspage: table %s has families this page cannot read: %w", s.GetName(), err)
		}
		for _, f := range fams {
			gc := gcText(f)
			r.Families = append(r.Families, familyRow{Name: f.Name, GC: gc, Compression: f.Compression.String(), Bloom: f.Bloom.String(),
				Type: f.ValueType.String(), BlockSize: f.BlockSize, InMemory: f.InMemory, Size: famSize[s.GetName()][f.Name]})
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *Page) eventRows(n int) []eventRow {
	var out []eventRow
	for _, e := range p.m.Events() {
		out = append(out, eventRowOf("master", e))
	}
	for _, e := range p.events.Since(time.Time{}) {
		// observe put the server first.
		out = append(out, eventRowOf(e.Attrs[0].Value, eventlog.Event{Time: e.Time, Kind: e.Kind, Table: e.Table,
			Tablet: e.Tablet, Message: e.Message, Attrs: e.Attrs[1:]}))
	}
	slices.SortStableFunc(out, func(a, b eventRow) int { return b.Time.Compare(a.Time) })
	return out[:min(n, len(out))]
}

func (p *Page) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		p.log.Warn("rendering the status page", "page", name, "err", err)
	}
}

func (p *Page) summary(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	servers, serr := p.serverRows(ctx)
	tables, terr := p.tableRows(ctx)
	b := p.base(ctx, "Tabula")
	if err := cmp.Or(serr, terr); err != nil {
		b.Err = err.Error()
	}
	p.render(w, "summary.html", struct {
		base
		Servers []serverRow
		Tables  []tableRow
		Events  []eventRow
	}{b, servers, tables, p.eventRows(20)})
}

func (p *Page) servers(w http.ResponseWriter, r *http.Request) {
	servers, err := p.serverRows(r.Context())
	b := p.base(r.Context(), "Servers")
	if err != nil {
		b.Err = err.Error()
	}
	p.render(w, "servers.html", struct {
		base
		Servers []serverRow
	}{b, servers})
}

func (p *Page) tables(w http.ResponseWriter, r *http.Request) {
	tables, err := p.tableRows(r.Context())
	b := p.base(r.Context(), "Tables")
	if err != nil {
		b.Err = err.Error()
	}
	p.render(w, "tables.html", struct {
		base
		Tables []tableRow
	}{b, tables})
}

func (p *Page) eventsPage(w http.ResponseWriter, r *http.Request) {
	p.render(w, "events.html", struct {
		base
		Events []eventRow
	}{p.base(r.Context(), "Events"), p.eventRows(500)})
}

func (p *Page) table(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("table")
	by := parseMeasure(r.URL.Query().Get("by"))
	b := p.base(ctx, "Table "+name)
	var table *tableRow
	tables, err := p.tableRows(ctx)
	for i := range tables {
		if tables[i].Name == name {
			table = &tables[i]
		}
	}
	if err == nil && table == nil {
		w.WriteHeader(http.StatusNotFound)
		err = fmt.Errorf("statuspage: no table %q", name)
	}
	var tablets []tabletRow
	if err == nil {
		tablets, err = p.tabletRows(ctx, name)
	}
	if err != nil {
		b.Err = err.Error()
	}
	var events []eventRow
	for _, e := range p.eventRows(500) {
		if e.Table == name && len(events) < 20 {
			events = append(events, e)
		}
	}
	p.render(w, "table.html", struct {
		base
		Table    *tableRow
		Tablets  []tabletRow
		By       Measure
		Measures []Measure
		Heatmap  *heatmapView
		Events   []eventRow
	}{b, table, tablets, by, []Measure{Reads, Writes, Bytes}, layout(p.heat.Columns(name), by), events})
}

func (p *Page) tabletRows(ctx context.Context, table string) ([]tabletRow, error) {
	lt, err := p.m.ListTablets(ctx, &tabulapb.ListTabletsRequest{Table: table})
	if err != nil {
		return nil, err
	}
	rep := p.m.Loads()
	var out []tabletRow
	for _, t := range lt.GetTablets() {
		r := tabletRow{ID: t.GetTabletId(), Start: keyText(string(t.GetStartKey()), "-inf"), End: keyText(string(t.GetEndKey()), "+inf"),
			Server: t.GetServerId(), ServerURL: p.serverURL(t.GetServerId(), t.GetServerAddress()), State: t.GetState(), Epoch: t.GetEpoch(),
			Size: t.GetSizeBytes(), SSTables: t.GetSstables(), Reads: t.GetReadsPerSec(), Writes: t.GetWritesPerSec(),
			ReadBytes: t.GetReadBytesPerSec(), WriteBytes: t.GetWriteBytesPerSec()}
		if l, ok := rep.Tablet(table, t.GetTabletId()); ok && p.m.IsLeader() {
			r.Busy, r.Reported = l.BusyShare, true
		}
		out = append(out, r)
	}
	return out, nil
}

var _ Master = (*master.Master)(nil)

// gcText says what a family's GC keeps.
func gcText(f families.Family) string {
	switch {
	case f.GCRule != nil:
		return f.GCRule.String()
	case f.MaxVersions == 0 && f.TTL == 0:
		return "keeps every version"
	case f.TTL == 0:
		return fmt.Sprintf("versions=%d", f.MaxVersions)
	case f.MaxVersions == 0:
		return fmt.Sprintf("ttl=%s", f.TTL)
	}
	return fmt.Sprintf("versions=%d ttl=%s gc=%s", f.MaxVersions, f.TTL, f.GC)
}
