package tabletserver

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/tabuladb/tabula/internal/offheap"
	"github.com/tabuladb/tabula/metrics"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/tabletserver/tablet"
	"github.com/tabuladb/tabula/vfs/backend"
	"github.com/tabuladb/tabula/wal"
)

// The tablet server's Prometheus series (docs/OPERATIONS.md "Metrics").
// Event series (flushes, compactions, commit log syncs) are fed by the
// engine's callbacks (tablet.Events, wal.Options.OnSync); the rest
// is read at scrape time from what the server already keeps (its tablets,
// the block cache, the memtable budget, the lease), so metrics cost the
// data path nothing but the gRPC interceptors and one histogram observe
// per commit log fsync.

// DefaultTopTablets is how many tablets get per-tablet series by default.
const DefaultTopTablets = 20

// counters are plain atomics the server bumps whether or not metrics are
// on (one line at each call site, no nil checks; they count rare events:
// splits, renewals, refused scans); the collector exports them.
type counters struct {
	splits        atomic.Uint64
	renewalsOK    atomic.Uint64
	renewalsFail  atomic.Uint64
	scansRejected atomic.Uint64
	scansStalled  atomic.Uint64
	loads         atomic.Uint64
}

func (c *counters) renewed(ok bool) {
	if ok {
		c.renewalsOK.Add(1)
	} else {
		c.renewalsFail.Add(1)
	}
}

// serverMetrics holds the event series of a server with metrics on; nil
// when they are off.
type serverMetrics struct {
	group *metrics.Group
	grpc  *metrics.GRPC

	flushes         prometheus.Counter
	flushBytes      prometheus.Counter
	flushSeconds    prometheus.Observer
	compactions     [2]prometheus.Counter // minor, major
	compactBytesIn  [2]prometheus.Counter
	compactBytesOut [2]prometheus.Counter
	compactSeconds  [2]prometheus.Observer
	logSyncSeconds  prometheus.Observer
	logSyncRecords  prometheus.Observer
	logSyncBytes    prometheus.Counter
	writeStalls     prometheus.Counter
	writeStallSecs  prometheus.Counter
	events          *tablet.Events
}

func ts(name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: metrics.Namespace, Subsystem: "tabletserver", Name: name, Help: help}
}

// newServerMetrics registers the server's series with r (nil: metrics
// off, nil result).
func newServerMetrics(s *Server, r prometheus.Registerer) *serverMetrics {
	g := metrics.Track(r)
	if g == nil {
		return nil
	}
	m := &serverMetrics{group: g, grpc: metrics.NewGRPC(g)}
	m.flushes = prometheus.NewCounter(prometheus.CounterOpts(ts("flushes_total", "Memtable flushes completed.")))
	m.flushBytes = prometheus.NewCounter(prometheus.CounterOpts(ts("flush_bytes_total", "SSTable bytes written by flushes.")))
	flushSeconds := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "tabletserver",
		Name: "flush_duration_seconds", Help: "Time of one memtable flush.", Buckets: metrics.DurationBuckets})
	m.flushSeconds = flushSeconds
	kind := []string{"kind"}
	comps := prometheus.NewCounterVec(prometheus.CounterOpts(ts("compactions_total", "Compactions of one family of one tablet completed, by kind (minor: the newest files merged; major: all files, deletions dropped).")), kind)
	in := prometheus.NewCounterVec(prometheus.CounterOpts(ts("compaction_bytes_in_total", "SSTable bytes read by compactions, by kind.")), kind)
	out := prometheus.NewCounterVec(prometheus.CounterOpts(ts("compaction_bytes_out_total", "SSTable bytes written by compactions, by kind.")), kind)
	secs := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "tabletserver",
		Name: "compaction_duration_seconds", Help: "Time of one compaction, by kind.", Buckets: metrics.DurationBuckets}, kind)
	for i, k := range []string{"minor", "major"} {
		m.compactions[i], m.compactBytesIn[i], m.compactBytesOut[i] = comps.WithLabelValues(k), in.WithLabelValues(k), out.WithLabelValues(k)
		m.compactSeconds[i] = secs.WithLabelValues(k)
	}
	syncSecs := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "tabletserver",
		Name: "commit_log_sync_seconds", Help: "Time of one commit log round: write plus fsync, what a durable write waits for once its round starts.", Buckets: metrics.LatencyBuckets})
	syncRecs := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metrics.Namespace, Subsystem: "tabletserver",
		Name: "commit_log_sync_group_size", Help: "Records made durable by one commit log fsync (group commit: writes that share an fsync).", Buckets: metrics.GroupBuckets})
	syncBytes := prometheus.NewCounter(prometheus.CounterOpts(ts("commit_log_bytes_total", "Bytes written to the commit log.")))
	m.logSyncSeconds, m.logSyncRecords, m.logSyncBytes = syncSecs, syncRecs, syncBytes
	m.writeStalls = prometheus.NewCounter(prometheus.CounterOpts(ts("write_stalls_total", "Writes that waited for room in their tablet's full memtable while its flush lagged.")))
	m.writeStallSecs = prometheus.NewCounter(prometheus.CounterOpts(ts("write_stall_seconds_total", "Time writes waited for room in their tablet's full memtable.")))
	m.events = &tablet.Events{Flushed: m.flushed, Compacted: m.compacted, WriteStalled: m.writeStalled}
	top := s.opts.MetricsTopTablets
	if top == 0 {
		top = DefaultTopTablets
	}
	g.MustRegister(m.flushes, m.flushBytes, flushSeconds, comps, in, out, secs, syncSecs, syncRecs, syncBytes,
		m.writeStalls, m.writeStallSecs, &stateCollector{s: s, top: top})
	return m
}

func (m *serverMetrics) flushed(e tablet.FlushEvent) {
	m.flushes.Inc()
	m.flushBytes.Add(float64(e.Bytes))
	m.flushSeconds.Observe(e.Duration.Seconds())
}

func (m *serverMetrics) compacted(e tablet.CompactionEvent) {
	i := 0
	if e.Major {
		i = 1
	}
	m.compactions[i].Inc()
	m.compactBytesIn[i].Add(float64(e.BytesIn))
	m.compactBytesOut[i].Add(float64(e.BytesOut))
	m.compactSeconds[i].Observe(e.Duration.Seconds())
}

func (m *serverMetrics) writeStalled(e tablet.WriteStallEvent) {
	m.writeStalls.Inc()
	m.writeStallSecs.Add(e.Duration.Seconds())
}

func (m *serverMetrics) logSynced(e wal.SyncEvent) {
	m.logSyncSeconds.Observe(e.Duration.Seconds())
	m.logSyncRecords.Observe(float64(e.Records))
	m.logSyncBytes.Add(float64(e.Bytes))
}

// engineEvents is tablet.Options.Events: nil with metrics off.
func (m *serverMetrics) engineEvents() *tablet.Events {
	if m == nil {
		return nil
	}
	return m.events
}

// onSync is the shared log's OnSync: nil with metrics off, so the log
// does not even read the clock.
func (m *serverMetrics) onSync() func(wal.SyncEvent) {
	if m == nil {
		return nil
	}
	return m.logSynced
}

func (m *serverMetrics) grpcOptions() []grpc.ServerOption {
	if m == nil {
		return nil
	}
	return m.grpc.ServerOptions()
}

func (m *serverMetrics) close() {
	if m != nil {
		m.group.Close()
	}
}

// stateCollector reads the server's state at scrape time: the totals and
// the top-N per-tablet series (metrics_top.go) from one pass over the
// tablets' statistics.
type stateCollector struct {
	s   *Server
	top int // tablets with per-tablet series; negative: none
}

var (
	descTablets        = desc("tablets", "Tablets this server serves.")
	descSizeBytes      = desc("size_bytes", "Bytes of all tablets served: SSTables plus memtables.")
	descSSTables       = desc("sstables", "SSTables of all tablets served.")
	descMemtableBytes  = desc("memtable_bytes", "Memtable memory of all tablets (the server-wide budget's use).")
	descMemtableLimit  = prometheus.NewDesc("tabula_tabletserver_memtable_limit_bytes", "The memtable budget's limits: past soft writers are throttled, past hard they are rejected.", []string{"limit"}, nil)
	descMemory         = prometheus.NewDesc("tabula_tabletserver_memory_bytes", "Memory the engine accounts for, by component, in parts that add up (memtable_active, memtable_flushing: the memtables' arena chunks, as the budget counts them; sstable_index_filter: the open SSTables' decoded indexes, bloom filters and properties; block_cache: the cached blocks' allocated size plus the cache's own entries); the Go runtime's overhead comes on top (go_memstats_next_gc_bytes).", []string{"component"}, nil)
	descOffHeap        = desc("offheap_bytes", "Bytes the process holds outside the Go heap (anonymous memory maps): the indexes and bloom filters of the larger open SSTables and the index blocks and filter bits of SSTable writers, parts of sstable_index_filter and sstable_writers in memory_bytes, plus those of closed files not yet released (at the next garbage collection). The Go runtime's metrics do not count them; process_resident_memory_bytes does. Process-wide: servers sharing a process report the same total.")
	descBacklog        = desc("compaction_backlog", "Compaction work waiting, summed over tablets: SSTables over the merge trigger plus split references still to rewrite.")
	descLogBytes       = desc("commit_log_live_bytes", "Bytes in the shared commit log's live segments (not yet covered by flushes).")
	descCacheHits      = desc("block_cache_hits_total", "Block cache lookups that found the block.")
	descCacheMisses    = desc("block_cache_misses_total", "Block cache lookups that had to read the block.")
	descCacheBytes     = desc("block_cache_bytes", "Bytes of blocks in the block cache.")
	descCacheCapacity  = desc("block_cache_capacity_bytes", "The block cache's capacity.")
	descBlocksRecycled = desc("decoded_blocks_recycled_total", "Decoded SSTable blocks given back to their pool for reuse once nothing held them (blocks read by compactions, point reads and scans, or evicted from the block cache). Process-wide: servers sharing a process report the same total.")
	descThrottled      = desc("writes_throttled_total", "Writes that waited because memtable memory was over the soft limit.")
	descRejected       = desc("writes_rejected_total", "Writes refused with RESOURCE_EXHAUSTED because memtable memory was over the hard limit.")
	descScansRejected  = desc("scans_rejected_total", "Scans refused with RESOURCE_EXHAUSTED because --max-scans were running.")
	descScansStalled   = desc("scans_stalled_total", "Scans ended because their client read nothing for --scan-stall-timeout.")
	descSplits         = desc("splits_total", "Tablet splits this server committed.")
	descRenewals       = prometheus.NewDesc("tabula_tabletserver_lease_renewals_total", "Lease renewals sent to etcd, by result (ok, failed).", []string{"result"}, nil)
	descLeaseRemaining = desc("lease_remaining_seconds", "Time left before the server must stop serving unless its lease is renewed (0: fenced).")
	descFences         = desc("fences_total", "Times the server paused serving because its lease was not renewed in time.")
	descFailures       = desc("tablet_failures_total", "Tablets taken out of service because their commit log or manifest could not be written.")
	descLoads          = desc("tablet_loads_total", "Tablets this server loaded (opened at a new epoch: created, moved to it or taken over).")
	descStoreRequests  = prometheus.NewDesc("tabula_tabletserver_store_requests_total", "Requests this server sent to its object store, by kind (list, get, head, put, copy, delete, other; a multi-object delete is one delete); none on a local disk. `tabula bench --store-metrics` turns them into requests per tablet load and per 1,000 operations.", []string{"kind"}, nil)
)

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("tabula_tabletserver_"+name, help, nil, nil)
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTablets, descSizeBytes, descSSTables, descMemtableBytes, descMemtableLimit, descMemory, descOffHeap, descBacklog,
		descLogBytes, descCacheHits, descCacheMisses, descCacheBytes, descCacheCapacity, descBlocksRecycled, descThrottled, descRejected,
		descScansRejected, descScansStalled, descSplits, descRenewals, descLeaseRemaining, descFences, descFailures, descLoads, descStoreRequests} {
		ch <- d
	}
	for _, v := range tabletValues {
		ch <- v.desc
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	var size uint64
	var sstables, backlog int
	var mem tablet.MemoryStats // summed over tablets, but for the shared cache
	hs := s.heldTablets("")
	samples := make([]tabletSample, len(hs))
	for i, h := range hs {
		st := h.t.Stats()
		samples[i] = tabletSample{table: h.table, id: h.id, stats: st, load: h.load.Last()}
		size += st.SizeBytes
		backlog += st.CompactionBacklog
		sstables += samples[i].sstables()
		mem.Memtable += st.Memory.Memtable
		mem.MemtableFlushing += st.Memory.MemtableFlushing
		mem.MemtableArena += st.Memory.MemtableArena
		mem.FileMetadata += st.Memory.FileMetadata
		mem.Writing += st.Memory.Writing
	}
	collectTop(ch, samples, c.top)
	gauge(descTablets, float64(len(hs)))
	gauge(descSizeBytes, float64(size))
	gauge(descSSTables, float64(sstables))
	gauge(descBacklog, float64(backlog))
	gauge(descMemtableBytes, float64(s.memory.Used()))
	soft, hard := s.memory.Limits()
	gauge(descMemtableLimit, float64(soft), "soft")
	gauge(descMemtableLimit, float64(hard), "hard")
	var logBytes int64
	s.walMu.Lock()
	if s.wal != nil {
		logBytes = s.wal.Size()
	}
	s.walMu.Unlock()
	gauge(descLogBytes, float64(logBytes))
	cs := s.cache.Stats()
	counter(descCacheHits, cs.Hits)
	counter(descCacheMisses, cs.Misses)
	gauge(descCacheBytes, float64(cs.Bytes))
	gauge(descCacheCapacity, float64(cs.Capacity))
	counter(descBlocksRecycled, sstable.RecycledBlocks())
	gauge(descMemory, float64(mem.Memtable-mem.MemtableFlushing), "memtable_active")
	gauge(descMemory, float64(mem.MemtableFlushing), "memtable_flushing")
	gauge(descMemory, float64(mem.FileMetadata), "sstable_index_filter")
	gauge(descMemory, float64(mem.Writing), "sstable_writers")
	gauge(descMemory, float64(cs.Bytes), "block_cache")
	gauge(descOffHeap, float64(offheap.Mapped()))
	counter(descThrottled, s.memory.Throttled())
	counter(descRejected, s.memory.Rejected())
	counter(descScansRejected, s.counters.scansRejected.Load())
	counter(descScansStalled, s.counters.scansStalled.Load())
	counter(descSplits, s.counters.splits.Load())
	counter(descRenewals, s.counters.renewalsOK.Load(), "ok")
	counter(descRenewals, s.counters.renewalsFail.Load(), "failed")
	gauge(descLeaseRemaining, max(0, (time.Duration(s.safeUntil.Load())-s.sinceBase()).Seconds()))
	counter(descFences, uint64(s.fences.Load()))
	counter(descFailures, uint64(s.failures.Load()))
	counter(descLoads, s.counters.loads.Load())
	if r, ok := backend.Requests(s.opts.FS); ok {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"list", r.List}, {"get", r.Get}, {"head", r.Head}, {"put", r.Put}, {"copy", r.Copy}, {"delete", r.Delete}, {"other", r.Other}} {
			counter(descStoreRequests, uint64(k.n), k.kind)
		}
	}
}
