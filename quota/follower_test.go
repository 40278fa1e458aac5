package quota

import (
	"context"
	"testing"
	"time"

	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/memstore"
)

// The follower gives the limiter every quota in etcd, drops removed ones,
// and sets this server's share from the tablets it holds: a table's and a
// namespace's by tablets, a principal's by live servers; a moved tablet
// changes the shares at the next computation.
func TestFollowerFollowsQuotasAndShares(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	l := meta.NewLayout("")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range []string{l.TabletKey("t", "1"), l.TabletKey("t", "2"), l.TabletKey("t", "3"), l.TabletKey("t", "4"),
		l.TabletKey("ns:a", "1"), l.TabletKey("ns:b", "1"), l.ServerKey("s1"), l.ServerKey("s2"), l.NamespaceKey("ns")} {
		if _, err := s.Put(ctx, k, "{}"); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan map[string]int, 1)
	held <- map[string]int{"t": 1, "ns:a": 1}
	lim := NewLimiter(nil)
	f := &Follower{Store: s, Layout: l, Limiter: lim, ShareInterval: time.Hour, // shares on quota changes only
		Held: func() map[string]int { h := <-held; held <- h; return h }}
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	put := func(scope, name string, r meta.QuotaRecord) {
		if err := meta.PutQuota(ctx, s, l, scope, name, r); err != nil {
			t.Fatal(err)
		}
	}
	want := func(k Key, share float64) {
		t.Helper()
		for {
			for _, in := range lim.Quotas() {
				if in.Key == k && in.Share == share {
					return
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s never got share %g: %+v", k, share, lim.Quotas())
			case <-time.After(time.Millisecond):
			}
		}
	}
	put("table", "t", meta.QuotaRecord{WriteRequests: 100})
	want(Key{Table, "t"}, 0.25)
	put("namespace", "ns", meta.QuotaRecord{ReadRequests: 10})
	want(Key{Namespace, "ns"}, 0.5)
	put("principal", "p", meta.QuotaRecord{ReadBytes: 10})
	want(Key{Principal, "p"}, 0.5)
	// The default namespace's tablets (t's 4 of the 6) are counted
	// without reading tablet keys: all less namespace ns's.
	put("namespace", "default", meta.QuotaRecord{WriteBytes: 10})
	want(Key{Namespace, "default"}, 0.25)
	// A tablet of t moves here: the next computation (here, the one a
	// quota change triggers) gives t half.
	<-held
	held <- map[string]int{"t": 2, "ns:a": 1}
	put("table", "other", meta.QuotaRecord{WriteRequests: 1})
	want(Key{Table, "t"}, 0.5)
	if err := meta.DeleteQuota(ctx, s, l, "table", "t"); err != nil {
		t.Fatal(err)
	}
	for {
		gone := true
		for _, in := range lim.Quotas() {
			gone = gone && in.Key != (Key{Table, "t"})
		}
		if gone {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("a removed quota stayed")
		case <-time.After(time.Millisecond):
		}
	}
}
