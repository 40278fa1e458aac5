package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// runResults holds one run's results: workload → engine → result.
type runResults map[string]map[string]result

func (rr runResults) add(r result) {
	if rr[r.Workload] == nil {
		rr[r.Workload] = map[string]result{}
	}
	rr[r.Workload][r.Engine] = r
}

// median returns the middle value of xs (the mean of the two middle ones
// for an even count), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// metric says how a workload's result is shown: its value, its unit, and
// the ratio of Tabula to a peer in one run.
type metric struct {
	value  func(result) float64
	format func(float64) string
	// ratio is Tabula's ratio to the peer: above 1 means Tabula is faster
	// for throughput and flush+compact (peer time ÷ Tabula time), and uses
	// more memory for peak RSS (Tabula ÷ peer).
	ratio func(tabula, peer result) float64
}

func metricOf(workload string) metric {
	switch {
	case strings.HasPrefix(workload, wPeakRSS):
		mib := func(r result) float64 { return float64(r.Bytes) / (1 << 20) }
		return metric{mib, func(v float64) string { return fmt.Sprintf("%.0f MiB", v) },
			func(t, p result) float64 { return mib(t) / mib(p) }}
	case strings.HasPrefix(workload, wFlushCompact):
		secs := func(r result) float64 { return r.elapsed().Seconds() }
		return metric{secs, func(v float64) string { return fmt.Sprintf("%.2f s", v) },
			func(t, p result) float64 { return secs(p) / secs(t) }}
	}
	return metric{result.opsPerSec, func(v float64) string { return fmt.Sprintf("%.0f ops/s", v) },
		func(t, p result) float64 { return t.opsPerSec() / p.opsPerSec() }}
}

// isInsert says whether a workload's writes/op are reported.
func isInsert(workload string) bool {
	return strings.HasPrefix(workload, wSeqInsert) || strings.HasPrefix(workload, wRandInsert) ||
		strings.HasPrefix(workload, wDurable)
}

// workloadOrder returns the workloads of runs in first-seen order of the
// first run that has them.
func workloadOrder(runs []runResults, order []string) []string {
	var out []string
	for _, w := range order {
		for _, rr := range runs {
			if _, ok := rr[w]; ok {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// medianOf is the median over runs of f applied to the engine's result.
func medianOf(runs []runResults, workload, engine string, f func(result) float64) (float64, bool) {
	var xs []float64
	for _, rr := range runs {
		if r, ok := rr[workload][engine]; ok {
			xs = append(xs, f(r))
		}
	}
	return median(xs), len(xs) > 0
}

// medianRatio is the median over runs of Tabula's ratio to peer in that run.
func medianRatio(runs []runResults, workload, peer string, m metric) (float64, bool) {
	var xs []float64
	for _, rr := range runs {
		t, tok := rr[workload]["tabula"]
		p, pok := rr[workload][peer]
		if tok && pok {
			xs = append(xs, m.ratio(t, p))
		}
	}
	return median(xs), len(xs) > 0
}

// writeRatioTable prints the markdown table for docs/BENCHMARKS.md:
// Tabula's median and the median of its per-run ratio to each peer, and
// the median writes/op of every engine on insert workloads.
func writeRatioTable(w io.Writer, runs []runResults, order, names []string) {
	var peers []string
	for _, n := range names {
		if n != "tabula" {
			peers = append(peers, n)
		}
	}
	var labels []string
	for _, n := range names {
		labels = append(labels, peerLabel[n])
	}
	fmt.Fprintf(w, "| workload | Tabula ops/s |")
	for _, p := range peers {
		fmt.Fprintf(w, " ÷ %s |", peerLabel[p])
	}
	fmt.Fprintf(w, " writes/op (%s) |\n|---|---:|", strings.Join(labels, " / "))
	for range peers {
		fmt.Fprintf(w, "---:|")
	}
	fmt.Fprintf(w, "---:|\n")
	for _, wl := range workloadOrder(runs, order) {
		m := metricOf(wl)
		fmt.Fprintf(w, "| %s |", wl)
		if v, ok := medianOf(runs, wl, "tabula", m.value); ok {
			fmt.Fprintf(w, " %s |", m.format(v))
		} else {
			fmt.Fprintf(w, " – |")
		}
		for _, p := range peers {
			if v, ok := medianRatio(runs, wl, p, m); ok {
				fmt.Fprintf(w, " %.2f |", v)
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		var wpo []string
		if isInsert(wl) {
			for _, n := range names {
				v, ok := medianOf(runs, wl, n, result.writesPerOp)
				if !ok || v < 0 {
					wpo = append(wpo, "–")
					continue
				}
				wpo = append(wpo, fmt.Sprintf("%.3g", v))
			}
		}
		fmt.Fprintf(w, " %s |\n", strings.Join(wpo, " / "))
	}
}

// writeEngineTable prints every engine's median per workload.
func writeEngineTable(w io.Writer, runs []runResults, order, names []string) {
	fmt.Fprintf(w, "| workload |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", peerLabel[n])
	}
	fmt.Fprintf(w, "\n|---|")
	for range names {
		fmt.Fprintf(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, wl := range workloadOrder(runs, order) {
		m := metricOf(wl)
		fmt.Fprintf(w, "| %s |", wl)
		for _, n := range names {
			if v, ok := medianOf(runs, wl, n, m.value); ok {
				fmt.Fprintf(w, " %s |", m.format(v))
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		fmt.Fprintln(w)
	}
}

// writeGroupCommit prints, for every engine, the median over runs of its
// durable throughput with 64 writers ÷ with one writer: how well
// concurrent writers share fsyncs.
func writeGroupCommit(w io.Writer, runs []runResults, names []string) {
	one, many := durableName(1), durableName(64)
	var parts []string
	for _, n := range names {
		var xs []float64
		for _, rr := range runs {
			a, aok := rr[one][n]
			b, bok := rr[many][n]
			if aok && bok {
				xs = append(xs, b.opsPerSec()/a.opsPerSec())
			}
		}
		if len(xs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f×", peerLabel[n], median(xs)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "Group commit, 64 durable writers ÷ 1 (median of per-run ratios): %s\n", strings.Join(parts, ", "))
	}
}
