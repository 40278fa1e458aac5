package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/metrics"
)

// fakeServers serves /metrics as two tablet servers of a dev cluster
// would (one endpoint, a server label each), with counters the test sets.
type fakeServers struct {
	loads    *prometheus.CounterVec
	requests *prometheus.CounterVec
	url      string
}

func newFakeServers(t *testing.T) *fakeServers {
	reg := metrics.NewRegistry()
	f := &fakeServers{
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tabula_tabletserver_tablet_loads_total", Help: "loads"}, []string{"server"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tabula_tabletserver_store_requests_total", Help: "requests"},
			[]string{"server", "kind"}),
	}
	reg.MustRegister(f.loads, f.requests)
	srv := httptest.NewServer(metrics.Handler(reg))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// TestStoreRequestsPerLoadAndPerThousandOps: bench sums the servers'
// counters over every series and endpoint, subtracts the reading before a
// step from the one after, and divides by the loads or by thousands of
// ops; the text and JSON reports say the same.
func TestStoreRequestsPerLoadAndPerThousandOps(t *testing.T) {
	a, b := newFakeServers(t), newFakeServers(t)
	ctx := context.Background()
	// Counts from before the bench: subtracted away.
	a.requests.WithLabelValues("ts1", "get").Add(1000)
	a.loads.WithLabelValues("ts1").Add(7)
	b.requests.WithLabelValues("ts3", "list") // a server that sent nothing yet: a series at 0
	urls := storeMetricsURLs(a.url + "/metrics, " + strings.TrimPrefix(b.url, "http://"))
	if len(urls) != 2 || urls[1] != b.url+"/metrics" {
		t.Fatalf("storeMetricsURLs = %q", urls)
	}
	before, err := scrapeStore(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	// 4 loads over three servers, 6 requests each: LIST 1, GET 3, PUT 1,
	// DELETE 1.
	for _, s := range []struct {
		f      *fakeServers
		server string
		loads  float64
	}{{a, "ts1", 1}, {a, "ts2", 2}, {b, "ts3", 1}} {
		s.f.loads.WithLabelValues(s.server).Add(s.loads)
		for kind, n := range map[string]float64{"list": 1, "get": 3, "put": 1, "delete": 1} {
			s.f.requests.WithLabelValues(s.server, kind).Add(n * s.loads)
		}
	}
	after, err := scrapeStore(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	if d.loads != 4 {
		t.Fatalf("loads = %v, want 4", d.loads)
	}
	perLoad := d.per(d.loads)
	want := map[string]float64{"list": 1, "get": 3, "put": 1, "delete": 1}
	if len(perLoad) != len(want) {
		t.Fatalf("per load = %v, want %v", perLoad, want)
	}
	for k, v := range want {
		if perLoad[k] != v {
			t.Fatalf("per load = %v, want %v", perLoad, want)
		}
	}
	if got := formatRequests(perLoad); got != "6.0: LIST 1.0, GET 3.0, PUT 1.0, DELETE 1.0" {
		t.Fatalf("formatRequests = %q", got)
	}
	// 2,000 writes made 210 PUTs: 105 per 1,000.
	b.requests.WithLabelValues("ts3", "put").Add(210)
	again, err := scrapeStore(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	w := benchResult{name: "randwrite", ops: 2000, elapsed: time.Second, store: again.sub(after).per(2000.0 / 1000)}
	l := benchResult{name: "tabletload", ops: int64(d.loads), elapsed: time.Second, store: perLoad}
	var text, js bytes.Buffer
	if err := printBench(&printer{w: &text}, []benchResult{l, w}, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "105.0: PUT 105.0") || !strings.Contains(text.String(), "6.0: LIST 1.0, GET 3.0, PUT 1.0, DELETE 1.0") {
		t.Fatalf("the report does not show the requests:\n%s", text.String())
	}
	if err := printBench(&printer{w: &js, json: true}, []benchResult{l, w}, 1); err != nil {
		t.Fatal(err)
	}
	rows := benchOutput(t, js.String())
	if got := rows["randwrite"]["store_requests"].(map[string]any)["put"]; got != 105.0 {
		t.Fatalf("JSON randwrite store_requests put = %v, want 105:\n%s", got, js.String())
	}
	if got := rows["tabletload"]["ops"]; got != 4.0 {
		t.Fatalf("JSON tabletload ops = %v, want 4", got)
	}
	var line map[string]any
	if err := json.Unmarshal(bytes.SplitN(js.Bytes(), []byte("\n"), 2)[0], &line); err != nil || line["workload"] != "tabletload" {
		t.Fatalf("first JSON line %v (%v), want the tabletload row", line, err)
	}

	// An endpoint without the series (not a tablet server on a store)
	// is an error, not zero requests.
	empty := httptest.NewServer(metrics.Handler(metrics.NewRegistry()))
	defer empty.Close()
	if _, err := scrapeStore(ctx, []string{empty.URL + "/metrics"}); err == nil || !strings.Contains(err.Error(), "not an object store") {
		t.Fatalf("scraping metrics without store requests: %v, want an error", err)
	}
}
