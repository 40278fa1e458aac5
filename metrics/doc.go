// Package metrics holds what every Tabula process shares to export
// Prometheus metrics on its operator HTTP port (/metrics): the registry of
// a process (with the Go runtime and process collectors), the HTTP
// handler, the gRPC server interceptors that count and time every call,
// and the histogram buckets.
//
// Each process uses its own prometheus.Registry, never the global one, so
// that several components in one process (a dev cluster runs a master, N
// tablet servers and a gateway; tests run many) never collide: a dev
// cluster hands each component ForServer(reg, name), which adds the
// constant label server="master", "ts-1", ... or "gateway" to every
// series the component registers. Standalone processes add no label (the
// scraper's instance label tells them apart).
//
// A component given a nil prometheus.Registerer exports nothing and
// installs no instrumentation at all: that is how metrics are switched
// off (`--metrics=false`), and what the overhead measurement in
// docs/BENCHMARKS.md compares against.
//
// The engine (tabletserver/tablet) knows nothing of Prometheus: it exposes
// plain counters and event callbacks, and the tablet server turns them
// into series (tabletserver/metrics.go). Every series is documented in
// docs/OPERATIONS.md ("Metrics"); a test keeps that list and the exported
// series equal.
package metrics
