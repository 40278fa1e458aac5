package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/metrics"
)

// storeKinds are the kinds of tabula_tabletserver_store_requests_total, in
// the order bench prints them.
var storeKinds = []string{"list", "get", "head", "put", "copy", "delete", "other"}

// storeCounts are what the tablet servers counted at one moment, summed
// over every server of every --store-metrics endpoint: the requests they
// sent to the object store, by kind, and the tablets they loaded. They
// come from the servers (the store's own counters would mix in the
// master's and anyone else's requests).
type storeCounts struct {
	loads    float64
	requests map[string]float64 // by kind
}

// scrapeStore reads the counts from each endpoint's /metrics text.
func scrapeStore(ctx context.Context, urls []string) (storeCounts, error) {
	c := storeCounts{requests: map[string]float64{}}
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return c, fmt.Errorf("--store-metrics %s: %w", u, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return c, fmt.Errorf("--store-metrics %s: %w", u, err)
		}
		fs, err := metrics.Parse(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return c, fmt.Errorf("--store-metrics %s: %s", u, resp.Status)
		}
		if err != nil {
			return c, fmt.Errorf("--store-metrics %s: %w", u, err)
		}
		if !fs.Has("tabula_tabletserver_store_requests_total", nil) {
			return c, fmt.Errorf("--store-metrics %s: no tabula_tabletserver_store_requests_total: not a tablet server's metrics, or its storage is not an object store", u)
		}
		n, _ := fs.Sum("tabula_tabletserver_tablet_loads_total", nil)
		c.loads += n
		for _, k := range storeKinds {
			n, _ := fs.Sum("tabula_tabletserver_store_requests_total", map[string]string{"kind": k})
			c.requests[k] += n
		}
	}
	return c, nil
}

// sub returns c minus an earlier b.
func (c storeCounts) sub(b storeCounts) storeCounts {
	d := storeCounts{loads: c.loads - b.loads, requests: map[string]float64{}}
	for k, n := range c.requests {
		d.requests[k] = n - b.requests[k]
	}
	return d
}

// per returns the requests divided by n (what one load, or 1,000
// operations, cost), by kind, leaving out kinds with none.
func (c storeCounts) per(n float64) map[string]float64 {
	out := map[string]float64{}
	if n <= 0 {
		return out
	}
	for k, v := range c.requests {
		if v != 0 {
			out[k] = v / n
		}
	}
	return out
}

// formatRequests prints requests by kind as "12.5: LIST 1.0, GET 2.5, ..."
// (the total first), in storeKinds' order.
func formatRequests(r map[string]float64) string {
	if len(r) == 0 {
		return "none"
	}
	var total float64
	var parts []string
	for _, k := range storeKinds {
		if v, ok := r[k]; ok {
			total += v
			parts = append(parts, fmt.Sprintf("%s %.1f", strings.ToUpper(k), v))
		}
	}
	return fmt.Sprintf("%.1f: %s", total, strings.Join(parts, ", "))
}

// storeMetricsURLs splits --store-metrics, adding /metrics to an address
// given without a path.
func storeMetricsURLs(flag string) []string {
	var out []string
	for u := range strings.SplitSeq(flag, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		if rest := u[strings.Index(u, "://")+3:]; !strings.Contains(rest, "/") {
			u += "/metrics"
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}
