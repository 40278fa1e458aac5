package master

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/metrics"
)

// The master's Prometheus series (docs/OPERATIONS.md "Metrics"). Counters
// are plain atomics the master bumps whether or not metrics are on (one
// line at each call site, no nil checks); the collector reads them, and
// the tablet index, at scrape time.

// counters are what the master counts for its metrics.
type counters struct {
	// assignments counts tablets this master assigned to a server
	// (new tablets, failovers, hand-ons after failed loads; not moves).
	assignments atomic.Uint64
	// failovers counts the assignments of tablets whose previous owner's
	// lease had expired: the server died or was cut off.
	failovers atomic.Uint64
	// moves counts tablets moved from one live server to another (the
	// balancer, Balance, operator moves): every successful move().
	moves atomic.Uint64
	// merges counts merges of adjacent tablets this master committed;
	// the merge code bumps it with m.counters.merges.Add(1).
	merges atomic.Uint64
	// serversLive is the number of registered servers in the leader's
	// last pass over the tablet map; 0 on a standby.
	serversLive atomic.Int64
}

// assigned counts one assignment, a failover if the tablet had an owner
// that is gone.
func (c *counters) assigned(failover bool) {
	c.assignments.Add(1)
	if failover {
		c.failovers.Add(1)
	}
}

// CountMerge counts one merge of adjacent tablets in
// tabula_master_merges_total. The merge code calls it once per merge it
// commits.
func (m *Master) CountMerge() { m.counters.merges.Add(1) }

func mdesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("tabula_master_"+name, help, labels, nil)
}

var (
	descLeader      = mdesc("leader", "1 while this master is the leader, else 0.")
	descTables      = mdesc("tables", "Tables in the cluster (from this master's index of etcd).")
	descTablets     = mdesc("tablets", "Tablets in the cluster by state (unassigned, assigned, serving, splitting).", "state")
	descServersLive = mdesc("servers_live", "Tablet servers registered in etcd as of the leader's last pass over the tablet map (0 on a standby).")
	descAssignments = mdesc("assignments_total", "Tablets assigned to a server by this master: new tablets, failovers, hand-ons after failed loads (moves are counted apart).")
	descFailovers   = mdesc("failovers_total", "Tablets reassigned because their server's lease expired (the server died or was cut off).")
	descMoves       = mdesc("moves_total", "Tablets moved between live servers (balancer, Balance, operator moves).")
	descSplits      = mdesc("splits_observed_total", "Tablet splits committed in etcd, as this master's index saw them (every master counts them).")
	descMerges      = mdesc("merges_total", "Merges of adjacent tablets this master committed.")
)

// masterCollector reads the master's state at scrape time.
type masterCollector struct{ m *Master }

func (c *masterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeader, descTables, descTablets, descServersLive, descAssignments, descFailovers, descMoves, descSplits, descMerges} {
		ch <- d
	}
}

func (c *masterCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	leader := 0.0
	if m.IsLeader() {
		leader = 1
	}
	gauge(descLeader, leader)
	tables, states := m.index.counts()
	gauge(descTables, float64(tables))
	for _, st := range []string{meta.StateUnassigned, meta.StateAssigned, meta.StateServing, meta.StateSplitting} {
		gauge(descTablets, float64(states[st]), st)
	}
	servers := m.counters.serversLive.Load()
	if leader == 0 {
		servers = 0
	}
	gauge(descServersLive, float64(servers))
	counter(descAssignments, m.counters.assignments.Load())
	counter(descFailovers, m.counters.failovers.Load())
	counter(descMoves, m.counters.moves.Load())
	counter(descSplits, m.index.splits.Load())
	counter(descMerges, m.counters.merges.Load())
}

// counts returns the number of tables and of tablets by state.
func (x *tabletIndex) counts() (tables int, states map[string]int) {
	states = map[string]int{}
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, tt := range x.tablets {
		for _, t := range tt.byID {
			states[t.State]++
		}
	}
	return len(x.schemas), states
}

// setupMetrics registers the master's series with opts.Metrics (nil:
// none) and returns the gRPC server options of its interceptors.
func (m *Master) setupMetrics() []grpc.ServerOption {
	m.metrics = metrics.Track(m.opts.Metrics)
	if m.metrics == nil {
		return nil
	}
	m.grpcMetrics = metrics.NewGRPC(m.metrics)
	m.metrics.MustRegister(&masterCollector{m: m})
	return m.grpcMetrics.ServerOptions()
}
