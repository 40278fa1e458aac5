package tabletserver

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// gatedWrites counts the transactions that write tablet records and holds
// the first one until release is closed.
type gatedWrites struct {
	meta.Store
	prefix  string
	writes  atomic.Int64
	held    chan struct{} // closed when the first write is held
	release chan struct{}
	first   atomic.Bool
	opened  sync.Once
}

// open lets the held write go (once).
func (g *gatedWrites) open() { g.opened.Do(func() { close(g.release) }) }

func (g *gatedWrites) Txn(ctx context.Context) clientv3.Txn {
	return &gatedTxn{g: g, txn: g.Store.Txn(ctx)}
}

type gatedTxn struct {
	g      *gatedWrites
	txn    clientv3.Txn
	writes bool
}

func (t *gatedTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.txn = t.txn.If(cs...); return t }

func (t *gatedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.writes = t.writes || (op.IsPut() && strings.HasPrefix(string(op.KeyBytes()), t.g.prefix))
	}
	t.txn = t.txn.Then(ops...)
	return t
}

func (t *gatedTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.txn = t.txn.Else(ops...); return t }

func (t *gatedTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.writes {
		t.g.writes.Add(1)
		if t.g.first.CompareAndSwap(false, true) {
			close(t.g.held)
			<-t.g.release
		}
	}
	return t.txn.Commit()
}

// freshLoads starts a server on a store whose first write of a tablet
// record waits for release, loads fresh tablet "a" (its record's write
// held), then the fresh tablets of ids at once; once their records wait
// behind a's it calls beforeRelease (if not nil), lets a's write go, and
// returns the loads' errors when all have ended, a's first. The test's
// own writes go to the store directly, not through the gate.
func freshLoads(t *testing.T, e *env, ids []string, beforeRelease func(*Server)) (*gatedWrites, *Server, []error) {
	t.Helper()
	g := &gatedWrites{Store: e.twin, prefix: e.layout.AllTabletsPrefix(), held: make(chan struct{}), release: make(chan struct{})}
	srv := e.start(func(o *Options) { o.Store = g })
	t.Cleanup(g.open) // before the server closes, if the test fails first
	c := e.dial(srv)
	all := append([]string{"a"}, ids...)
	recs := make([]meta.TabletRecord, len(all))
	for i, id := range all {
		var start, end []byte
		if i > 0 {
			start = []byte(id)
		}
		if i < len(all)-1 {
			end = []byte(all[i+1])
		}
		recs[i] = e.assign(id, start, end, srv, 1)
	}
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	load := func(i int) {
		defer wg.Done()
		_, errs[i] = c.LoadTablet(e.ctx, loadRequest(e, recs[i]))
	}
	wg.Add(1)
	go load(0)
	<-g.held
	for i := 1; i < len(all); i++ {
		wg.Add(1)
		go load(i)
	}
	eventually(t, 10*time.Second, "the other loads' records queued behind the first", func() bool {
		return srv.fresh.queued() == len(ids)
	})
	if beforeRelease != nil {
		beforeRelease(srv)
	}
	g.open()
	wg.Wait()
	return g, srv, errs
}

// The records of fresh tablets loaded at once are written together: the
// loads that queue while one transaction runs share the next one, and
// every tablet is served and recorded as created.
func TestFreshLoadsShareTheirTransactions(t *testing.T) {
	e := newEnv(t)
	ids := []string{"b", "c", "d", "e", "f"}
	g, srv, errs := freshLoads(t, e, ids, nil)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	if n := g.writes.Load(); n != 2 {
		t.Fatalf("6 fresh loads wrote their records in %d transactions, want 2 (the first's, then the 5 queued behind it)", n)
	}
	for _, id := range append([]string{"a"}, ids...) {
		if rec := e.tablet(id); rec.Fresh {
			t.Fatalf("tablet %s still fresh in etcd after its load", id)
		}
		if !srv.serves(e.schema.Name, id) {
			t.Fatalf("tablet %s not served after its load", id)
		}
	}
}

// A record that changed while its load waited fails that load alone: the
// transaction of the queued records fails as a whole and they are
// written one by one, each with the answer its own update would have had.
func TestAFreshLoadWhoseRecordChangedFailsAlone(t *testing.T) {
	e := newEnv(t)
	ids := []string{"b", "c", "d"}
	g, srv, errs := freshLoads(t, e, ids, func(*Server) {
		rec := e.tablet("c").TabletRecord
		rec.State = meta.StateServing // any write moves its ModRevision
		e.putRecord(rec)
	})
	for i, id := range append([]string{"a"}, ids...) {
		switch {
		case id == "c" && errs[i] == nil:
			t.Fatalf("the load of c, whose record changed, succeeded")
		case id != "c" && errs[i] != nil:
			t.Fatalf("load of %s: %v", id, errs[i])
		}
		if served := srv.serves(e.schema.Name, id); served != (id != "c") {
			t.Fatalf("tablet %s served: %v", id, served)
		}
	}
	// a's, the queued three's together (failed), then theirs one by one.
	if n := g.writes.Load(); n != 5 {
		t.Fatalf("%d transactions writing tablet records, want 5", n)
	}
}

func loadRequest(e *env, rec meta.TabletRecord) *tabulapb.LoadTabletRequest {
	return &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema}
}

// serves reports whether s holds table/id.
func (s *Server) serves(table, id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tablets[tabletKey(table, id)] != nil
}
