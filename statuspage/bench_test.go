package statuspage

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tabuladb/tabula/master"
)

// BenchmarkObserve100kTablets reduces reports of 100,000 tablets (1,000
// tables of 100, 8 access quantiles each) into heatmap columns, and
// reports the heap the full history holds.
func BenchmarkObserve100kTablets(b *testing.B) {
	reps := make([]*master.LoadReport, 4)
	for i := range reps {
		var ts []*master.TabletLoad
		for tab := range 1000 {
			for j := range 100 {
				t := tl(fmt.Sprintf("table%04d", tab), fmt.Sprintf("user%06d", j*1000), fmt.Sprintf("user%06d", (j+1)*1000), float64((i+j)%13))
				for q := range 8 {
					t.AccessQuantiles = append(t.AccessQuantiles, fmt.Appendf(nil, "user%06d", j*1000+100*(q+1)+i))
				}
				ts = append(ts, t)
			}
		}
		reps[i] = report(time.Unix(int64(i), 0), ts...)
	}
	h := NewHeatmaps(HeatmapOptions{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := *reps[i%len(reps)]
		rep.At = time.Unix(int64(i), 0)
		h.Observe(&rep)
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(h.Cells()), "cells")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heapMiB")
}
