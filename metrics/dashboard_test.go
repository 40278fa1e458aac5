package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The Grafana dashboard is valid JSON and queries only documented series
// (a renamed series would leave a panel empty without anyone noticing);
// it covers the panels docs/OPERATIONS.md promises.
func TestDashboardUsesDocumentedSeries(t *testing.T) {
	b, err := os.ReadFile("../docs/grafana/tabula.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana/tabula.json: %v", err)
	}
	f, err := os.Open("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Documented(f)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`tabula_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base := strings.TrimSuffix(n, suffix); base != n && doc[base] == "histogram" {
						n = base
					}
				}
				if _, ok := doc[n]; !ok {
					t.Errorf("panel %q queries %s, which is not a documented series", p.Title, n)
				}
				used[n] = true
			}
		}
	}
	for _, n := range []string{"tabula_grpc_server_handled_total", "tabula_grpc_server_handling_seconds", "tabula_tabletserver_memtable_bytes",
		"tabula_tabletserver_flushes_total", "tabula_tabletserver_compactions_total", "tabula_tabletserver_block_cache_hits_total",
		"tabula_tabletserver_commit_log_sync_seconds", "tabula_tabletserver_lease_remaining_seconds", "tabula_tabletserver_tablets"} {
		if !used[n] {
			t.Errorf("the dashboard has no panel using %s", n)
		}
	}
}
