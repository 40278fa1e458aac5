package tabletserver

import (
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/faultstore"
)

// splitFixture loads one tablet holding rows a, k, z on a server whose
// etcd calls go through fs.
func splitFixture(t *testing.T, fs *faultstore.Store) (*env, *Server, tabulapb.TabletServerClient, *tabulapb.TabletRef) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.WrapStore = fs.Wrap })
	c := e.dial(srv)
	ref := e.load(c, e.assign("parent", nil, nil, srv, 1))
	for _, row := range []string{"a", "k", "z"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatal(err)
		}
	}
	return e, srv, c, ref
}

// readTablets reads every tablet etcd lists and returns all row keys.
func readTablets(t *testing.T, e *env, c tabulapb.TabletServerClient) []string {
	t.Helper()
	ts, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, "users")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, vt := range ts {
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: &tabulapb.TabletRef{Table: vt.Table, TabletId: vt.ID, Epoch: vt.Epoch}})
		if err != nil {
			t.Fatalf("reading tablet %s at epoch %d: %v", vt.ID, vt.Epoch, err)
		}
		keys = append(keys, rowKeys(rows)...)
	}
	return keys
}

// A split's etcd transaction commits but its answer is lost: the server
// must find out that it committed and serve the children, not the parent
// etcd no longer has.
func TestSplitWhoseCommitAnswerIsLostServesTheChildren(t *testing.T) {
	fs := faultstore.New(nil)
	e, _, c, ref := splitFixture(t, fs)
	fs.FailTxn(faultstore.DeletesUnder(e.layout.AllTabletsPrefix()), faultstore.AfterCommit, 1)
	resp, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")})
	if err != nil {
		t.Fatalf("split with a lost commit answer: %v", err)
	}
	if fs.Injected() != 1 || len(resp.Tablets) != 2 {
		t.Fatalf("injected %d faults, split answered %d tablets", fs.Injected(), len(resp.Tablets))
	}
	if got := readTablets(t, e, c); !slices.Equal(got, []string{"a", "k", "z"}) {
		t.Fatalf("after the split the tablets etcd lists read %v", got)
	}
}

// A split's etcd transaction fails without applying: the parent is still
// in etcd, so the server serves it again and removes the children's
// folders.
func TestSplitWhoseCommitFailedServesTheParentAgain(t *testing.T) {
	fs := faultstore.New(nil)
	e, _, c, ref := splitFixture(t, fs)
	fs.FailTxn(faultstore.DeletesUnder(e.layout.AllTabletsPrefix()), faultstore.BeforeCommit, 1)
	if _, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")}); err == nil {
		t.Fatal("a split whose commit failed succeeded")
	}
	if got := readTablets(t, e, c); !slices.Equal(got, []string{"a", "k", "z"}) {
		t.Fatalf("after the failed split the tablets etcd lists read %v", got)
	}
	if err := put(e.ctx, c, ref, "b", set("cf", "q", 1, "b")); err != nil {
		t.Fatalf("the parent does not take writes after the failed split: %v", err)
	}
}

// A server cut off from etcd pauses; if its lease expired meanwhile it
// drops its tablets, registers under a new lease and releases what it held
// under the old one, so the master can hand it on.
func TestServerCutOffPastItsLeaseRegistersAgainOwningNothing(t *testing.T) {
	fs := faultstore.New(nil)
	e := newEnv(t)
	r := &renewals{}
	srv := e.startWithRenewals(r, func(o *Options) { o.WrapStore = fs.Wrap })
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", nil, nil, srv, 1))
	old := clientv3.LeaseID(srv.leaseID.Load())
	release := fs.BlockKeepAlives()
	defer release()
	// A renewal already past the block may still answer: lose it, so
	// nothing resumes the server once it has paused.
	_, _, fences := r.pause(t)
	eventually(t, 10*time.Second, "the pause", func() bool { return srv.Fences() == fences && !srv.Serving() })
	wantNotServing(t, "write while cut off", put(e.ctx, c, ref, "r", set("cf", "q", 1, "v")), "users", "t1")
	if err := fs.Expire(e.ctx, old); err != nil {
		t.Fatal(err)
	}
	r.resume()
	release()
	eventually(t, 10*time.Second, "registration under a new lease", func() bool {
		return srv.Serving() && clientv3.LeaseID(srv.leaseID.Load()) != old
	})
	if rec := e.tablet("t1"); rec.State != meta.StateUnassigned || rec.Lease != 0 {
		t.Fatalf("t1 after re-registration: %+v; want released", rec.TabletRecord)
	}
	wantNotServing(t, "write after re-registration", put(e.ctx, c, ref, "r", set("cf", "q", 1, "v")), "users", "t1")
}
