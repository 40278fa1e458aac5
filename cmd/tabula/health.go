package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/opshttp"
)

// defaultDevHTTP is where `tabula dev` serves /healthz and /readyz: next
// to the master's default 127.0.0.1:7100, on loopback only. The other
// server commands serve nothing by default (--http ""): several of them
// often share a host (tests, a laptop), and a fixed default port would make
// the second one fail to start.
const defaultDevHTTP = "127.0.0.1:7180"

// addHTTPFlag adds --http, the address of the operator's HTTP endpoints,
// --metrics, which switches /metrics (and all instrumentation) off, and
// --pprof, which serves Go's profiles there.
func addHTTPFlag(c *cobra.Command, def string) {
	c.Flags().String("http", def, "serve /healthz, /readyz, /metrics (Prometheus) and the status page over HTTP on this address (\"\": off); port 0 picks one")
	c.Flags().Bool("metrics", true, "with --http: serve Prometheus metrics on /metrics; false installs no instrumentation at all")
	c.Flags().Bool("pprof", false, "with --http: serve Go's runtime profiles on /debug/pprof/ (CPU, heap, goroutines; off by default: they show the process's internals to whoever reaches the port)")
}

// opsMetrics returns the process's metrics registry and its /metrics
// route when --http is set and --metrics is on; (nil, nil) otherwise, and
// then the components install no instrumentation. The registerer is a
// nil interface, not a typed nil, when off: components test it for nil.
//
// With --pprof the routes also serve Go's profiles under /debug/pprof/
// (how docs/BENCHMARKS.md profiles real servers under load).
func opsMetrics(v *viper.Viper) (prometheus.Registerer, []opshttp.Route) {
	if v.GetString("http") == "" {
		return nil, nil
	}
	var routes []opshttp.Route
	if v.GetBool("pprof") {
		routes = append(routes, pprofRoutes()...)
	}
	if !v.GetBool("metrics") {
		return nil, routes
	}
	reg := metrics.NewRegistry()
	return reg, append(routes, opshttp.Route{Pattern: metrics.Pattern, Handler: metrics.Handler(reg)})
}

// pprofRoutes are net/http/pprof's handlers, mounted on the operator's
// mux rather than on http.DefaultServeMux (which nothing serves).
func pprofRoutes() []opshttp.Route {
	return []opshttp.Route{
		{Pattern: "/debug/pprof/", Handler: http.HandlerFunc(pprof.Index)},
		{Pattern: "/debug/pprof/cmdline", Handler: http.HandlerFunc(pprof.Cmdline)},
		{Pattern: "/debug/pprof/profile", Handler: http.HandlerFunc(pprof.Profile)},
		{Pattern: "/debug/pprof/symbol", Handler: http.HandlerFunc(pprof.Symbol)},
		{Pattern: "/debug/pprof/trace", Handler: http.HandlerFunc(pprof.Trace)},
	}
}

// serveOps starts the operator's HTTP endpoints for h (and routes) if
// --http is set (nil, nil otherwise) and says where they are.
func serveOps(v *viper.Viper, h *opshttp.Health, out io.Writer, routes ...opshttp.Route) (*opshttp.Server, error) {
	addr := v.GetString("http")
	if addr == "" {
		return nil, nil
	}
	s, err := opshttp.Serve(addr, h, routes...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "health checks on http://%s/healthz and /readyz\n", s.Addr())
	for _, r := range routes {
		if r.Pattern == metrics.Pattern {
			fmt.Fprintf(out, "Prometheus metrics on http://%s/metrics\n", s.Addr())
		}
	}
	return s, nil
}

// closeOps stops s if it runs.
func closeOps(s *opshttp.Server) {
	if s != nil {
		s.Close()
	}
}

// writeAddrFile writes addr to dir/name, for scripts and tests that
// started a process on port 0.
func writeAddrFile(dir, name, addr string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(addr+"\n"), 0o644)
}

func newHealthCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "health --http HOST:PORT [--live]",
		Short: "Probe a process's /readyz (or /healthz with --live): exit 0 if it answers 200, else 1",
		Long: `Ask the operator's HTTP endpoints of a master, tablet server, gateway or
dev cluster (their --http address) whether the process is ready (/readyz),
or only alive with --live (/healthz). Exits 0 on 200; otherwise prints the
process's reason and exits 1. For container health checks in images that
have no curl (docker-compose.yml uses it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			addr, _ := cmd.Flags().GetString("http")
			if addr == "" {
				return &usageError{cmd: "health", err: fmt.Errorf("--http HOST:PORT is required")}
			}
			path := "/readyz"
			if live, _ := cmd.Flags().GetBool("live"); live {
				path = "/healthz"
			}
			wait, _ := cmd.Flags().GetDuration("wait")
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			if err := opshttp.Probe(ctx, addr, path); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	}
	c.Flags().String("http", "", "the process's --http address")
	c.Flags().Bool("live", false, "ask /healthz (alive) instead of /readyz (ready)")
	c.Flags().Duration("wait", 5*time.Second, "give up after this long")
	return c
}
