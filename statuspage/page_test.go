package statuspage

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/eventlog"
	"github.com/tabuladb/tabula/master"
	"github.com/tabuladb/tabula/opshttp"
)

// fakeMaster answers the page from canned data.
type fakeMaster struct {
	leader   bool
	rep      *master.LoadReport
	watchers []func(*master.LoadReport)
	events   []eventlog.Event
	tablets  []*tabulapb.TabletInfo
}

func (f *fakeMaster) Addr() string { return "10.0.0.1:7100" }
func (f *fakeMaster) Leader(context.Context) string {
	if f.leader {
		return f.Addr()
	}
	return "10.0.0.2:7100"
}
func (f *fakeMaster) IsLeader() bool                           { return f.leader }
func (f *fakeMaster) Loads() *master.LoadReport                { return f.rep }
func (f *fakeMaster) OnLoadReport(fn func(*master.LoadReport)) { f.watchers = append(f.watchers, fn) }
func (f *fakeMaster) Events() []eventlog.Event                 { return f.events }
func (f *fakeMaster) ListServers(context.Context, *tabulapb.ListServersRequest) (*tabulapb.ListServersResponse, error) {
	return &tabulapb.ListServersResponse{Servers: []*tabulapb.ServerInfo{
		{Id: "ts-1", Address: "127.0.0.1:7201", Tablets: 2, SizeBytes: 3 << 20, ReadsPerSec: 12},
		{Id: "ts-2", Address: "127.0.0.1:7202", Tablets: 1},
	}}, nil
}
func (f *fakeMaster) ListTables(context.Context, *tabulapb.ListTablesRequest) (*tabulapb.ListTablesResponse, error) {
	return &tabulapb.ListTablesResponse{Tables: []*tabulapb.TableSchema{{
		Name: "users", State: "enabled", SplitThresholdBytes: 64 << 20,
		Families: []*tabulapb.Family{{Name: "profile", MaxVersions: 3, Compression: tabulapb.Compression_COMPRESSION_SNAPPY}},
	}}}, nil
}
func (f *fakeMaster) ListTablets(_ context.Context, req *tabulapb.ListTabletsRequest) (*tabulapb.ListTabletsResponse, error) {
	return &tabulapb.ListTabletsResponse{Tablets: f.tablets}, nil
}

func (f *fakeMaster) publish(rep *master.LoadReport) {
	f.rep = rep
	for _, fn := range f.watchers {
		fn(rep)
	}
}

const evil = "z<script>alert(1)</script>"

func newFake() *fakeMaster {
	return &fakeMaster{
		leader: true,
		events: []eventlog.Event{{Time: time.Now(), Kind: "leader", Message: "elected leader"}},
		tablets: []*tabulapb.TabletInfo{
			{Table: "users", TabletId: "t1", EndKey: []byte("m\x01"), ServerId: "ts-1", State: "serving"},
			{Table: "users", TabletId: "t2", StartKey: []byte("m\x01"), EndKey: []byte(evil), ServerId: "ts-1", State: "serving"},
			{Table: "users", TabletId: "t3", StartKey: []byte(evil), ServerId: "ts-2", State: "serving"},
		},
	}
}

func serve(t *testing.T, p *Page) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(opshttp.Handler(opshttp.NewHealth(func(context.Context) error { return nil }), p.Routes()...))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPagesShowTheClusterAndEscapeKeys: every page answers, shows the
// servers (linked to their pages), the table and its families, the
// events; keys are escaped (HTML and non-printable bytes).
func TestPagesShowTheClusterAndEscapeKeys(t *testing.T) {
	f := newFake()
	p := New(f, Options{ServerURL: func(id, _ string) string { return "/servers/" + id + "/" }})
	base := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		rep := report(base.Add(time.Duration(i)*10*time.Second),
			tl("users", "", "c", 1), tl("users", "c", "m\x01", 3), tl("users", "m\x01", evil, 500, "p", "q"), tl("users", evil, "", 2))
		rep.Servers["ts-1"] = &master.ServerLoad{ID: "ts-1", Events: []eventlog.Event{{Time: base, Kind: "flush", Table: "users", Tablet: "t2", Message: "flushed"}}}
		f.publish(rep)
	}
	srv := serve(t, p)
	for _, path := range []string{"/", "/servers", "/tables", "/tables/users", "/tables/users?by=writes", "/tables/users?by=bytes", "/events"} {
		code, body := get(t, srv.URL+path)
		if code != 200 {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		if strings.Contains(body, evil) {
			t.Errorf("GET %s: a key went out unescaped", path)
		}
	}
	_, home := get(t, srv.URL+"/")
	for _, want := range []string{`href="/servers/ts-1/"`, `data-server="ts-2"`, `data-table="users"`, "profile", "flushed", "elected leader", "(leader)"} {
		if !strings.Contains(home, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	_, page := get(t, srv.URL+"/tables/users")
	for _, want := range []string{"z&lt;script&gt;alert(1)&lt;/script&gt;", `m\x01`, "versions=3", "64.0 MiB", `id="heatmap"`, `data-columns="3"`} {
		if !strings.Contains(page, want) {
			t.Errorf("table page lacks %q", want)
		}
	}
	// The hottest cells are the hot tablet's sub-ranges.
	start, end, _ := hottest(t, page)
	if !(start >= `m\x01` && end <= evil) {
		t.Errorf("hottest cell [%s, %s), want inside [m\\x01, %s)", start, end, evil)
	}
	if code, _ := get(t, srv.URL+"/tables/nope"); code != http.StatusNotFound {
		t.Errorf("GET /tables/nope: %d, want 404", code)
	}
}

var rectRE = regexp.MustCompile(`<rect class="cell"[^>]*data-start="([^"]*)" data-end="([^"]*)" data-value="([^"]*)"`)

// hottest returns the range and value of the hottest heatmap cell.
func hottest(t *testing.T, page string) (start, end string, value float64) {
	t.Helper()
	value = -1
	for _, m := range rectRE.FindAllStringSubmatch(page, -1) {
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		if v > value {
			start, end, value = html.UnescapeString(m[1]), html.UnescapeString(m[2]), v
		}
	}
	if value < 0 {
		t.Fatal("no heatmap cells")
	}
	return start, end, value
}

// TestStandbyPageSaysWhoLeads: a standby's page names the leader and
// shows no load.
func TestStandbyPageSaysWhoLeads(t *testing.T) {
	f := newFake()
	f.leader = false
	srv := serve(t, New(f, Options{}))
	_, body := get(t, srv.URL+"/")
	if !strings.Contains(body, `id="standby"`) || !strings.Contains(body, "the leader is <b>10.0.0.2:7100</b>") {
		t.Errorf("standby page does not say who leads:\n%s", body)
	}
	_, table := get(t, srv.URL+"/tables/users")
	if !strings.Contains(table, `id="heatmap-empty"`) {
		t.Errorf("standby table page draws a heatmap")
	}
}

// TestHeatmapPageIsBounded: after more reports than the history keeps,
// the page draws Columns columns, and no more rows than gridRows.
func TestHeatmapPageIsBounded(t *testing.T) {
	f := newFake()
	p := New(f, Options{Heatmap: HeatmapOptions{Columns: 30}})
	base := time.Unix(1_700_000_000, 0)
	for i := range 45 {
		var ts []*master.TabletLoad
		for j := range 300 {
			ts = append(ts, tl("users", fmt.Sprintf("k%03d", j), fmt.Sprintf("k%03d", j+1), float64(j%7)))
		}
		f.publish(report(base.Add(time.Duration(i)*10*time.Second), ts...))
	}
	if n := len(p.Heatmaps().Columns("users")); n != 30 {
		t.Fatalf("%d columns kept, want 30", n)
	}
	srv := serve(t, p)
	_, page := get(t, srv.URL+"/tables/users")
	if !strings.Contains(page, `data-columns="30"`) || !strings.Contains(page, fmt.Sprintf(`data-rows="%d"`, gridRows)) {
		t.Errorf("heatmap not bounded to 30 columns and %d rows", gridRows)
	}
	if n := len(rectRE.FindAllString(page, -1)); n > 30*gridRows {
		t.Errorf("%d rects, more than columns x rows", n)
	}
}
