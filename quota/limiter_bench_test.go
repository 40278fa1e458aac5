package quota

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/meta"
)

// BenchmarkAdmit is the data path's quota check with a quota set (docs/
// BENCHMARKS.md "Quotas"), by goroutines calling at once (g1, g2, g16;
// run with -cpu 1,2):
//
//   - other: the callers meet no quota (another principal has one): the
//     unthrottled caller beside a throttled one;
//   - shared: every caller meets the same table quota;
//   - own: each goroutine is a principal with its own quota.
//
// Rates are high enough that nothing is refused: this is the cost of an
// admission, not of a refusal.
func BenchmarkAdmit(b *testing.B) {
	for _, kind := range []string{"other", "shared", "own"} {
		for _, g := range []int{1, 2, 16} {
			b.Run(fmt.Sprintf("%s/g%d", kind, g), func(b *testing.B) {
				l := NewLimiter(time.Now)
				l.Set(Key{Principal, "batch"}, meta.QuotaRecord{WriteRequests: 1e15})
				l.Set(Key{Table, "t"}, meta.QuotaRecord{ReadRequests: 1e15})
				reqs := make([]Request, g)
				for i := range reqs {
					reqs[i] = Request{Principal: "app", Tables: []Cost{{Table: "u", Requests: 1}}}
					switch kind {
					case "shared":
						reqs[i].Tables[0].Table = "t"
					case "own":
						p := fmt.Sprintf("p%d", i)
						l.Set(Key{Principal, p}, meta.QuotaRecord{ReadRequests: 1e15})
						reqs[i].Principal = p
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				var wg sync.WaitGroup
				for i := range g {
					n := b.N / g
					if i < b.N%g {
						n++
					}
					wg.Go(func() {
						for range n {
							if err := l.Admit(reqs[i]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}
