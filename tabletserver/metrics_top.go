package tabletserver

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// The per-tablet series exist for the N largest tablets of the server
// only, chosen at scrape time, so that a server with 100,000 tablets
// exports a bounded number of series. A tablet that drops out of the top
// N disappears from the scrape (Prometheus marks its series stale);
// operators look at tabula_tabletserver_* for the totals.
//
// Each value is one entry of tabletValues: per-tablet request rates (from
// the load meters) become more entries reading more fields of
// tabletSample, without touching the ranking or the labels.

// tabletSample is what one scrape knows of one tablet.
type tabletSample struct {
	table, id string
	stats     tablet.Stats
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
	return prometheus.NewDesc("tabula_tablet_"+name, help+" Only the server's largest tablets (--metrics-top-tablets) have this series.", tabletLabels, nil)
}

var tabletValues = []tabletValue{
	{tabletDesc("size_bytes", "Bytes of the tablet: SSTables plus memtable."), func(t *tabletSample) float64 { return float64(t.stats.SizeBytes) }},
	{tabletDesc("memtable_bytes", "Memtable bytes of the tablet."), func(t *tabletSample) float64 { return float64(t.stats.MemtableBytes) }},
	{tabletDesc("sstables", "SSTables of the tablet, all families."), func(t *tabletSample) float64 { return float64(t.sstables()) }},
	{tabletDesc("compaction_backlog", "Compaction work waiting in the tablet."), func(t *tabletSample) float64 { return float64(t.stats.CompactionBacklog) }},
}

// collectTop sends the per-tablet series of the n largest samples.
func collectTop(ch chan<- prometheus.Metric, samples []tabletSample, n int) {
	if n < 0 {
		return
	}
	for _, t := range topBySize(samples, n) {
		for _, v := range tabletValues {
			ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, v.value(t), t.table, t.id)
		}
	}
}

// topBySize returns the n largest samples, largest first (ties by table
// and id, so that the set is stable between scrapes).
func topBySize(samples []tabletSample, n int) []*tabletSample {
	out := make([]*tabletSample, len(samples))
	for i := range samples {
		out[i] = &samples[i]
	}
	slices.SortFunc(out, func(a, b *tabletSample) int {
		if c := cmp.Compare(b.stats.SizeBytes, a.stats.SizeBytes); c != 0 {
			return c
		}
		if c := cmp.Compare(a.table, b.table); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out[:min(n, len(out))]
}
