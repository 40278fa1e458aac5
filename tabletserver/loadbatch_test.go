package tabletserver

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
)

// tabletReads counts the transactions that read tablet records (Gets of
// keys under prefix), and wraps the schema reads' counter.
type tabletReads struct {
	*schemaReads
	prefix string
	n      atomic.Int64
}

func (c *tabletReads) Txn(ctx context.Context) clientv3.Txn {
	return &tabletReadsTxn{Txn: c.schemaReads.Txn(ctx), c: c}
}

type tabletReadsTxn struct {
	clientv3.Txn
	c     *tabletReads
	reads bool
}

func (t *tabletReadsTxn) If(cs ...clientv3.Cmp) clientv3.Txn { t.Txn = t.Txn.If(cs...); return t }
func (t *tabletReadsTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *tabletReadsTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.reads = t.reads || op.IsGet() && strings.HasPrefix(string(op.KeyBytes()), t.c.prefix)
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *tabletReadsTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.reads {
		t.c.n.Add(1)
	}
	return t.Txn.Commit()
}

// loadBatch sends LoadTablets and returns each load's answer code by
// index, answering each to seen (if not nil) as it arrives.
func loadTablets(t *testing.T, ctx context.Context, c tabulapb.TabletServerClient, loads []*tabulapb.LoadTabletRequest, seen func(i int)) []codes.Code {
	t.Helper()
	stream, err := c.LoadTablets(ctx, &tabulapb.LoadTabletsRequest{Loads: loads})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]codes.Code, len(loads))
	got := make([]bool, len(loads))
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("LoadTablets: %v", err)
		}
		i := int(resp.GetIndex())
		if i >= len(loads) || got[i] {
			t.Fatalf("answer for load %d: out of range or twice", i)
		}
		got[i], out[i] = true, codes.Code(resp.GetCode())
		if seen != nil {
			seen(i)
		}
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("load %d of %d not answered", i, len(loads))
		}
	}
	return out
}

// A batch load checks each tablet against its own record (read for the
// whole batch in one etcd request, the schema once): a tablet assigned
// here at another epoch (fenced) and one etcd does not have are refused
// alone, the others load.
func TestABatchLoadRefusesAFencedTabletAlone(t *testing.T) {
	e := newEnv(t)
	reads := &tabletReads{schemaReads: &schemaReads{Store: e.twin, key: e.layout.TableKey(e.schema.Name)}, prefix: e.layout.AllTabletsPrefix()}
	srv := e.start(func(o *Options) { o.Store = reads })
	c := e.dial(srv)
	bounds := []string{"", "b", "d", "f", ""}
	var loads []*tabulapb.LoadTabletRequest
	for i, id := range []string{"a", "b", "c", "d"} {
		rec := e.assign(id, []byte(bounds[i]), []byte(bounds[i+1]), srv, 1)
		if id == "c" {
			// Reassigned here at epoch 2 since: the load at epoch 1 is
			// stale and must be refused.
			next := rec
			next.Epoch = 2
			e.putRecord(next)
		}
		loads = append(loads, loadRequest(e, rec))
	}
	ghost := meta.TabletRecord{Table: e.schema.Name, ID: "ghost", Server: srv.ID(), Epoch: 1, Lease: srv.leaseID.Load()}
	loads = append(loads, loadRequest(e, ghost))
	reads.n.Store(0)
	reads.schemaReads.n.Store(0)
	codesOf := loadTablets(t, e.ctx, c, loads, nil)
	want := []codes.Code{codes.OK, codes.OK, codes.FailedPrecondition, codes.OK, codes.FailedPrecondition}
	for i, l := range loads {
		id := l.GetTablet().GetTabletId()
		if codesOf[i] != want[i] {
			t.Errorf("tablet %s: %v, want %v", id, codesOf[i], want[i])
		}
		if served := srv.serves(e.schema.Name, id); served != (want[i] == codes.OK) {
			t.Errorf("tablet %s served: %v", id, served)
		}
	}
	if n := reads.n.Load(); n != 1 {
		t.Errorf("a batch of 5 loads read tablet records in %d etcd requests, want 1", n)
	}
	if n := reads.schemaReads.n.Load(); n != 1 {
		t.Errorf("a batch of one table's tablets read its schema %d times, want 1", n)
	}
}

// A tablet of the batch that another operation of the server holds (here:
// its key locked, as by a load, unload, split or merge in progress) does
// not delay the others: they are answered while it waits, and it is
// loaded once the lock is released.
func TestABatchLoadDoesNotWaitForABusyTablet(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	bounds := []string{"", "b", "d", ""}
	var loads []*tabulapb.LoadTabletRequest
	for i, id := range []string{"a", "b", "c"} {
		loads = append(loads, loadRequest(e, e.assign(id, []byte(bounds[i]), []byte(bounds[i+1]), srv, 1)))
	}
	unlock := srv.keys.lock(tabletKey(e.schema.Name, "b"))
	answered := 0
	codesOf := loadTablets(t, e.ctx, c, loads, func(i int) {
		answered++
		if i == 1 && answered != 3 {
			t.Errorf("the busy tablet was answered %d-th, want last", answered)
		}
		if answered == 2 {
			unlock() // both others answered while b's lock was held
		}
	})
	for i, code := range codesOf {
		if code != codes.OK {
			t.Errorf("load %d: %v", i, code)
		}
	}
}

// Options.LoadParallelism bounds the tablets of a batch opened at once:
// each load of a batch holds a slot of a semaphore of that many slots
// while it opens its tablet (checked from inside each load, the test
// letting one go only once 2 are in).
func TestBatchLoadsOpenAtMostLoadParallelismAtOnce(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	inside, most, unslotted := 0, 0, 0
	in := make(chan struct{}, 8)
	release := make(chan struct{})
	var srv *Server
	srv = e.start(func(o *Options) {
		o.LoadParallelism = 2
		o.testHookBatchLoad = func() {
			mu.Lock()
			inside++
			most = max(most, inside)
			if len(srv.loadSem) < inside {
				unslotted++ // a load past the bound without its slot
			}
			mu.Unlock()
			in <- struct{}{}
			<-release
			mu.Lock()
			inside--
			mu.Unlock()
		}
	})
	if cap(srv.loadSem) != 2 {
		t.Fatalf("LoadParallelism 2: a semaphore of %d slots", cap(srv.loadSem))
	}
	c := e.dial(srv)
	bounds := []string{"", "b", "d", "f", ""}
	var loads []*tabulapb.LoadTabletRequest
	for i, id := range []string{"a", "b", "c", "d"} {
		loads = append(loads, loadRequest(e, e.assign(id, []byte(bounds[i]), []byte(bounds[i+1]), srv, 1)))
	}
	done := make(chan []codes.Code)
	go func() { done <- loadTablets(t, e.ctx, c, loads, nil) }()
	for range 2 {
		<-in
	}
	for range 2 {
		release <- struct{}{} // one leaves, the next may come in
		<-in
	}
	close(release)
	for i, code := range <-done {
		if code != codes.OK {
			t.Errorf("load %d: %v", i, code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 2 || unslotted > 0 {
		t.Fatalf("with LoadParallelism 2: up to %d loads of a batch open at once, %d without a slot", most, unslotted)
	}
}
