package master

import (
	"github.com/tabuladb/tabula/quota"
)

// startQuotaUsage publishes the stored size of every table and namespace
// with a space quota after each load report (quota.Usage; docs/
// OPERATIONS.md "Quotas"): the load report is the one place that knows
// every tablet's size. Only the leader collects reports, so only it
// writes.
func (m *Master) startQuotaUsage() {
	u := quota.NewUsage(m.cli, m.layout, m.log)
	m.OnLoadReport(func(r *LoadReport) {
		if !u.Wanted() {
			return
		}
		sizes := map[string]int64{}
		for _, t := range r.Tablets {
			sizes[t.Table] += t.SizeBytes
		}
		u.Observe(r.At, sizes)
	})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		u.Run(m.ctx)
	}()
}
