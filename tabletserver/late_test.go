package tabletserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/meta/faultstore"
)

// readThroughEtcd reads every row of every tablet etcd now lists, loading
// each on srv at its epoch first (as the master would send LoadTablet for
// a tablet etcd assigns to srv; a no-op for one already held).
func readThroughEtcd(t *testing.T, e *env, c tabulapb.TabletServerClient) []string {
	t.Helper()
	ts, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, e.schema.Name)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, vt := range ts {
		if _, err := c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: vt.ToProto(), Schema: e.schema}); err != nil {
			t.Fatalf("loading tablet %s [%q, %q) at epoch %d, as etcd now lists it: %v", vt.ID, vt.Start, vt.End, vt.Epoch, err)
		}
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: &tabulapb.TabletRef{Table: vt.Table, TabletId: vt.ID, Epoch: vt.Epoch}})
		if err != nil {
			t.Fatalf("reading tablet %s at epoch %d: %v", vt.ID, vt.Epoch, err)
		}
		keys = append(keys, rowKeys(rows)...)
	}
	return keys
}

// A split whose commit answered a timeout but reaches etcd later: the
// server must not take "the children are not in etcd yet" for "the split
// did not happen". After the late transaction lands, every write the
// server acknowledged is readable through whatever etcd then says the
// range is.
func TestSplitWhoseCommitLandsLateLosesNoAcknowledgedWrite(t *testing.T) {
	fs := faultstore.New(nil)
	e, _, c, ref := splitFixture(t, fs)
	late := fs.LateCommit(faultstore.DeletesUnder(e.layout.AllTabletsPrefix()))
	if _, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")}); err == nil {
		t.Fatal("a split whose commit timed out and was not found committed succeeded")
	}
	// The split is known not to have committed, so the parent takes
	// writes again; each acknowledged one must stay readable.
	want := []string{"a", "k", "z"}
	for _, row := range []string{"b", "n"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatalf("write to the parent of a split that did not commit: %v", err)
		}
		want = append(want, row)
	}
	if resp, err := late.Release(e.ctx); err == nil && resp.Succeeded {
		t.Logf("the late commit landed at revision %d", resp.Header.Revision)
	}
	slices.Sort(want)
	if got := readThroughEtcd(t, e, c); !slices.Equal(got, want) {
		t.Fatalf("after the late split landed the tablets etcd lists read %v, want %v", got, want)
	}
}

// The same for a merge whose commit lands late.
func TestMergeWhoseCommitLandsLateLosesNoAcknowledgedWrite(t *testing.T) {
	fs := faultstore.New(nil)
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.WrapStore = fs.Wrap })
	c := e.dial(srv)
	lref, rref, want := twoTablets(e, c, srv)
	late := fs.LateCommit(faultstore.DeletesUnder(e.layout.AllTabletsPrefix()))
	if _, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref}); err == nil {
		t.Fatal("a merge whose commit timed out and was not found committed succeeded")
	}
	for _, w := range []struct {
		ref *tabulapb.TabletRef
		row string
	}{{lref, "b1"}, {rref, "n1"}} {
		if err := put(e.ctx, c, w.ref, w.row, set("cf", "q", 1, w.row)); err != nil {
			t.Fatalf("write to a parent of a merge that did not commit: %v", err)
		}
		want = append(want, w.row)
	}
	if resp, err := late.Release(e.ctx); err == nil && resp.Succeeded {
		t.Logf("the late commit landed at revision %d", resp.Header.Revision)
	}
	slices.Sort(want)
	if got := readThroughEtcd(t, e, c); !slices.Equal(got, want) {
		t.Fatalf("after the late merge landed the tablets etcd lists read %v, want %v", got, want)
	}
}

// unsettle runs op (a split or a merge of parents) with its commit held
// back (its answer a timeout) and every fence failing: the outcome stays
// unknown. It checks that the parents are no longer served nor loaded
// again at their epochs, and returns the held-back commit and the table's
// tablet folders other than the parents' (the children's, kept).
func unsettle(t *testing.T, fs *faultstore.Store, e *env, srv *Server, c tabulapb.TabletServerClient, parents []*tabulapb.TabletRef, op func() error) (*faultstore.Late, []string) {
	t.Helper()
	defer func(d time.Duration) { settleTimeout = d }(settleTimeout)
	settleTimeout = 200 * time.Millisecond
	late := fs.LateCommit(faultstore.DeletesUnder(e.layout.AllTabletsPrefix()))
	var failing atomic.Bool
	failing.Store(true)
	fences := faultstore.PutsUnder(e.layout.TabletKey(parents[0].Table, parents[0].TabletId))
	fs.FailTxn(func(then []clientv3.Op) bool { return failing.Load() && fences(then) }, faultstore.BeforeCommit, 1<<30)
	opErr := op()
	failing.Store(false)
	if opErr == nil {
		t.Fatal("an operation whose commit and fences got no answer succeeded")
	}
	entries, err := os.ReadDir(filepath.Dir(srv.tabletDir(parents[0].Table, parents[0].TabletId)))
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, en := range entries {
		if en.IsDir() && !slices.ContainsFunc(parents, func(r *tabulapb.TabletRef) bool { return r.TabletId == en.Name() }) {
			children = append(children, en.Name())
		}
	}
	if len(children) != 3-len(parents) {
		t.Fatalf("after the unknown outcome the table's folders are %v; want the parents' and the children's kept", entries)
	}
	// The parents are not served, and not served again at their epochs:
	// the commit may still land on their keys.
	for _, ref := range parents {
		wantNotServing(t, "write to a parent", put(e.ctx, c, ref, "b", set("cf", "q", 1, "b")), ref.Table, ref.TabletId)
		rec := e.tablet(ref.TabletId)
		_, err = c.LoadTablet(e.ctx, &tabulapb.LoadTabletRequest{Tablet: rec.ToProto(), Schema: e.schema})
		if status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("LoadTablet of parent %s at its epoch %d after an unknown outcome: %v; want it refused (FailedPrecondition)", ref.TabletId, rec.Epoch, err)
		}
	}
	if !strings.Contains(opErr.Error(), "outcome unknown") {
		t.Fatalf("an operation whose commit and fences got no answer: %v; want outcome unknown", opErr)
	}
	return late, children
}

// unsettledSplit is unsettle for a split of ref at "m".
func unsettledSplit(t *testing.T, fs *faultstore.Store, e *env, srv *Server, c tabulapb.TabletServerClient, ref *tabulapb.TabletRef) (*faultstore.Late, []string) {
	t.Helper()
	return unsettle(t, fs, e, srv, c, []*tabulapb.TabletRef{ref}, func() error {
		_, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")})
		return err
	})
}

// A split whose outcome stays unknown (its commit and every fence got no
// answer): the server keeps the children's folders and refuses the parent
// at its epoch, so the master must take it back and hand it out again
// through meta.Assign, whose transaction is guarded by the parent's
// ModRevision like the split's. If the reassignment comes first the split
// can never land; if the split lands first its children open from their
// kept folders. Either way nothing acknowledged is lost.
func TestSplitWithAnUnknownOutcomeKeepsBothPossibleStates(t *testing.T) {
	t.Run("reassigned first", func(t *testing.T) {
		fs := faultstore.New(nil)
		e, srv, c, ref := splitFixture(t, fs)
		late, _ := unsettledSplit(t, fs, e, srv, c, ref)
		servers, err := meta.GetServers(e.ctx, e.cli, e.layout)
		if err != nil || len(servers) != 1 {
			t.Fatalf("servers %+v %v", servers, err)
		}
		next, err := meta.Assign(e.ctx, e.cli, e.layout, e.tablet(ref.TabletId), servers[0])
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := late.Release(e.ctx); err != nil || resp.Succeeded {
			t.Fatalf("the split landed after the parent was reassigned: %+v %v", resp, err)
		}
		nref := e.load(c, next.TabletRecord)
		if err := put(e.ctx, c, nref, "b", set("cf", "q", 1, "b")); err != nil {
			t.Fatalf("write to the reassigned parent: %v", err)
		}
		if got, want := readThroughEtcd(t, e, c), []string{"a", "b", "k", "z"}; !slices.Equal(got, want) {
			t.Fatalf("the tablets etcd lists read %v, want %v", got, want)
		}
	})
	t.Run("landed first", func(t *testing.T) {
		fs := faultstore.New(nil)
		e, srv, c, ref := splitFixture(t, fs)
		late, children := unsettledSplit(t, fs, e, srv, c, ref)
		if resp, err := late.Release(e.ctx); err != nil || !resp.Succeeded {
			t.Fatalf("the split did not land: %+v %v", resp, err)
		}
		ts, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, e.schema.Name)
		if err != nil || len(ts) != 2 || !slices.Contains(children, ts[0].ID) || !slices.Contains(children, ts[1].ID) {
			t.Fatalf("etcd lists %+v (%v); want the children whose folders were kept, %v", ts, err, children)
		}
		if got, want := readThroughEtcd(t, e, c), []string{"a", "k", "z"}; !slices.Equal(got, want) {
			t.Fatalf("the tablets etcd lists read %v, want %v", got, want)
		}
	})
}

// A merge whose outcome stays unknown: the merged folder is kept and both
// parents are refused at their epochs. If the master reassigns a parent
// first the merge can never land; if the merge lands first the merged
// tablet opens from its kept folder.
func TestMergeWithAnUnknownOutcomeKeepsBothPossibleStates(t *testing.T) {
	unsettledMerge := func(t *testing.T) (*env, tabulapb.TabletServerClient, *faultstore.Late, []string, []string) {
		fs := faultstore.New(nil)
		e := newEnv(t)
		srv := e.start(func(o *Options) { o.WrapStore = fs.Wrap })
		c := e.dial(srv)
		lref, rref, rows := twoTablets(e, c, srv)
		late, merged := unsettle(t, fs, e, srv, c, []*tabulapb.TabletRef{lref, rref}, func() error {
			_, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
			return err
		})
		return e, c, late, merged, rows
	}
	t.Run("reassigned first", func(t *testing.T) {
		e, c, late, _, rows := unsettledMerge(t)
		servers, err := meta.GetServers(e.ctx, e.cli, e.layout)
		if err != nil || len(servers) != 1 {
			t.Fatalf("servers %+v %v", servers, err)
		}
		for _, id := range []string{"left", "right"} {
			if _, err := meta.Assign(e.ctx, e.cli, e.layout, e.tablet(id), servers[0]); err != nil {
				t.Fatal(err)
			}
		}
		if resp, err := late.Release(e.ctx); err != nil || resp.Succeeded {
			t.Fatalf("the merge landed after its parents were reassigned: %+v %v", resp, err)
		}
		if got := readThroughEtcd(t, e, c); !slices.Equal(got, rows) {
			t.Fatalf("the tablets etcd lists read %v, want %v", got, rows)
		}
	})
	t.Run("landed first", func(t *testing.T) {
		e, c, late, merged, rows := unsettledMerge(t)
		if resp, err := late.Release(e.ctx); err != nil || !resp.Succeeded {
			t.Fatalf("the merge did not land: %+v %v", resp, err)
		}
		ts, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, e.schema.Name)
		if err != nil || len(ts) != 1 || ts[0].ID != merged[0] {
			t.Fatalf("etcd lists %+v (%v); want the merged tablet whose folder was kept, %v", ts, err, merged)
		}
		if got := readThroughEtcd(t, e, c); !slices.Equal(got, rows) {
			t.Fatalf("the tablets etcd lists read %v, want %v", got, rows)
		}
	})
}
