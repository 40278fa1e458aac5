package tabletserver

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/tabletserver/load"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// The per-tablet series exist only for the server's N largest tablets and
// its N busiest (requests/s over the last load window), chosen at scrape
// time, so that a server with 100,000 tablets exports a bounded number of
// series and a hot small tablet is among them. A tablet that drops out of
// both tops disappears from the scrape (Prometheus marks its series
// stale); operators look at tabula_tabletserver_* for the totals.
//
// Each value is one entry of tabletValues, reading a field of
// tabletSample.

// tabletSample is what one scrape knows of one tablet.
type tabletSample struct {
	table, id string
	stats     tablet.Stats
	load      load.Window // the last closed load window
}

func (t *tabletSample) sstables() int {
	n := 0
	for _, f := range t.stats.Families {
		n += f.SSTables
	}
	return n
}

// tabletValue is one per-tablet series.
type tabletValue struct {
	desc  *prometheus.Desc
	value func(*tabletSample) float64
}

var tabletLabels = []string{"table", "tablet"}

func tabletDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("tabula_tablet_"+name, help+" Only the server's largest and busiest tablets (--metrics-top-tablets of each) have this series.", tabletLabels, nil)
}

var tabletValues = []tabletValue{
	{tabletDesc("size_bytes", "Bytes of the tablet: SSTables plus memtable."), func(t *tabletSample) float64 { return float64(t.stats.SizeBytes) }},
	{tabletDesc("memtable_bytes", "Memtable bytes of the tablet."), func(t *tabletSample) float64 { return float64(t.stats.MemtableBytes) }},
	{tabletDesc("sstables", "SSTables of the tablet, all families."), func(t *tabletSample) float64 { return float64(t.sstables()) }},
	{tabletDesc("compaction_backlog", "Compaction work waiting in the tablet."), func(t *tabletSample) float64 { return float64(t.stats.CompactionBacklog) }},
	{tabletDesc("write_stall_seconds", "Time writes waited for room in the tablet's full memtable since it was loaded here."), func(t *tabletSample) float64 { return t.stats.WriteStallTime.Seconds() }},
	{tabletDesc("reads_per_second", "Read requests per second over the last load window."), func(t *tabletSample) float64 { return t.load.ReadsPerSec() }},
	{tabletDesc("writes_per_second", "Write requests per second over the last load window."), func(t *tabletSample) float64 { return t.load.WritesPerSec() }},
	{tabletDesc("busy_ratio", "Seconds spent serving the tablet's requests per second of the last load window."), func(t *tabletSample) float64 { return t.load.BusyShare() }},
}

// collectTop sends the per-tablet series of the n largest and the n
// busiest samples (each once).
func collectTop(ch chan<- prometheus.Metric, samples []tabletSample, n int) {
	if n < 0 {
		return
	}
	// Every tablet can be among the largest (an empty server's tablets
	// still show), only a tablet with requests among the busiest.
	largest := top(samples, n, -1, func(t *tabletSample) float64 { return float64(t.stats.SizeBytes) })
	busiest := top(samples, n, 0, func(t *tabletSample) float64 { return t.load.RequestsPerSec() })
	sent := make(map[*tabletSample]bool, 2*n)
	for _, t := range append(largest, busiest...) {
		if sent[t] {
			continue
		}
		sent[t] = true
		for _, v := range tabletValues {
			ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, v.value(t), t.table, t.id)
		}
	}
}

// top returns the at most n samples with the highest key above floor,
// highest first (ties by table and id, so that the set is stable between
// scrapes).
func top(samples []tabletSample, n int, floor float64, key func(*tabletSample) float64) []*tabletSample {
	out := make([]*tabletSample, 0, len(samples))
	for i := range samples {
		if key(&samples[i]) > floor {
			out = append(out, &samples[i])
		}
	}
	slices.SortFunc(out, func(a, b *tabletSample) int {
		if c := cmp.Compare(key(b), key(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.table, b.table); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out[:min(n, len(out))]
}
