package quota

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/meta"
)

// Requests that meet the same quotas from many goroutines, in every
// order of tables, namespaces and principals, while quotas are added,
// changed and removed beside them: no deadlock, and on a stopped clock
// exactly each quota's burst is admitted, never more (a lost update of a
// bucket would admit more).
func TestLimiterConcurrentAdmitsExactlyTheBurst(t *testing.T) {
	c := newClock() // never advanced: no refill
	l := NewLimiter(c.now)
	l.Set(Key{Table, "a:t"}, meta.QuotaRecord{WriteRequests: 300})
	l.Set(Key{Namespace, "a"}, meta.QuotaRecord{WriteRequests: 1e9})
	l.Set(Key{Principal, "p"}, meta.QuotaRecord{WriteRequests: 1e9})
	l.Set(Key{Table, "a:u"}, meta.QuotaRecord{WriteRequests: 1e9})
	var admitted atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // quotas of other keys come and go; a's are changed in place
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := Key{Table, fmt.Sprintf("other%d", i%5)}
			l.Set(k, meta.QuotaRecord{ReadRequests: 1})
			l.SetShare(Key{Namespace, "a"}, 1)
			l.Set(Key{Principal, "p"}, meta.QuotaRecord{WriteRequests: 1e9})
			l.Remove(k)
		}
	})
	var workers sync.WaitGroup
	for g := range 16 {
		workers.Go(func() {
			for range 200 {
				// Half the requests name the tables the other way round:
				// the quotas' lock order must not depend on it.
				tables := []Cost{{Table: "a:t", Requests: 1}, {Table: "a:u", Requests: 1}}
				if g%2 == 1 {
					tables[0], tables[1] = tables[1], tables[0]
				}
				if l.Admit(Request{Principal: "p", Write: true, Tables: tables}) == nil {
					admitted.Add(1)
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	if n := admitted.Load(); n != 300 {
		t.Fatalf("admitted %d requests on a stopped clock, want the burst of 300", n)
	}
}
