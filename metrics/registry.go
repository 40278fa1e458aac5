package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every Tabula series: tabula_<subsystem>_<name>.
const Namespace = "tabula"

// ServerLabel is the constant label that tells the components of one
// process apart (ForServer).
const ServerLabel = "server"

// NewRegistry returns a registry for one process with the Go runtime
// (go_*) and process (process_*) collectors registered.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return r
}

// ForServer returns a registerer that adds server=name to every series
// registered through it, for one component of a process that runs
// several (the dev cluster). A nil r gives nil: metrics stay off.
func ForServer(r prometheus.Registerer, name string) prometheus.Registerer {
	if r == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{ServerLabel: name}, r)
}

// Handler serves g in the Prometheus text format (or OpenMetrics when the
// scraper asks for it). A collector that fails is reported in the
// response while the other series are still served, so one broken
// collector does not blind the operator.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
		// A scrape is cheap; a stuck one must not pile up.
		Timeout:             10 * time.Second,
		MaxRequestsInFlight: 4,
	})
}

// Pattern is the ServeMux pattern of the metrics endpoint.
const Pattern = "GET /metrics"

// Buckets of the histograms, in seconds or bytes.
var (
	// LatencyBuckets time RPCs and commit log syncs: 100 µs to 30 s.
	LatencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// DurationBuckets time background work (flushes, compactions):
	// 1 ms to 10 min.
	DurationBuckets = []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 120, 300, 600}
	// GroupBuckets count records per commit log fsync (group commit).
	GroupBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
)
