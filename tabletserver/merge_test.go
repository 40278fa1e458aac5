package tabletserver

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
	"github.com/tabuladb/tabula/internal/testkit/writers"
	"github.com/tabuladb/tabula/meta"
)

// twoTablets loads "left" [, m) at epoch 3 and "right" [m, ) at epoch 5
// and writes rows a..z (one per letter) through them.
func twoTablets(e *env, c tabulapb.TabletServerClient, srv *Server) (lref, rref *tabulapb.TabletRef, rows []string) {
	e.t.Helper()
	lref = e.load(c, e.assign("left", nil, []byte("m"), srv, 3))
	rref = e.load(c, e.assign("right", []byte("m"), nil, srv, 5))
	for ch := 'a'; ch <= 'z'; ch++ {
		row := string(ch)
		ref := lref
		if row >= "m" {
			ref = rref
		}
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			e.t.Fatal(err)
		}
		rows = append(rows, row)
	}
	// Some rows in files, the rest in the memtables.
	for _, ref := range []*tabulapb.TabletRef{lref, rref} {
		if _, err := c.FlushTablet(e.ctx, ref); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, row := range []string{"c", "x"} {
		ref := lref
		if row >= "m" {
			ref = rref
		}
		if err := put(e.ctx, c, ref, row, set("cf", "q", 2, "newer-"+row)); err != nil {
			e.t.Fatal(err)
		}
	}
	return lref, rref, rows
}

func TestMergeViaRPCServesTheUnionAndCollectsTheParentsLater(t *testing.T) {
	e := newEnv(t)
	// No background compaction: the test decides when the merged tablet
	// stops referencing its parents' files.
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	lref, rref, want := twoTablets(e, c, srv)
	resp, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Tablet
	if len(m.StartKey) != 0 || len(m.EndKey) != 0 || m.Epoch != 6 || m.ServerId != srv.ID() {
		t.Fatalf("merged tablet %+v; want [,) at epoch 6 here", m)
	}
	all, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, "users")
	if err != nil || len(all) != 1 || all[0].ID != m.TabletId || !slices.Equal(all[0].MergedFrom, []string{"left", "right"}) || all[0].Epoch != 6 {
		t.Fatalf("etcd after the merge: %+v, %v", all, err)
	}
	wantNotServing(t, "write to the left parent", put(e.ctx, c, lref, "b", set("cf", "q", 3, "x")), "users", "left")
	wantNotServing(t, "write to the right parent", put(e.ctx, c, rref, "y", set("cf", "q", 3, "x")), "users", "right")
	mref := &tabulapb.TabletRef{Table: "users", TabletId: m.TabletId, Epoch: m.Epoch}
	check := func(what string) {
		t.Helper()
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: mref})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rowKeys(rows), want) {
			t.Fatalf("%s: merged tablet serves %q, want %q", what, rowKeys(rows), want)
		}
		for _, r := range rows {
			k, v := string(r.Key), string(r.Cells[0].Value)
			if wantV := map[string]string{"c": "newer-c", "x": "newer-x"}[k]; v != wantV && (wantV != "" || v != k) {
				t.Fatalf("%s: row %s reads %q", what, r.Key, v)
			}
		}
	}
	check("after the merge")
	if err := put(e.ctx, c, mref, "n", set("cf", "q", 1, "n")); err != nil {
		t.Fatalf("write to the merged tablet: %v", err)
	}

	// The parents' folders stay while the merged tablet references their
	// files, and go once its major compaction has rewritten them.
	srv.collectParents()
	for _, id := range []string{"left", "right"} {
		if _, err := os.Stat(srv.tabletDir("users", id)); err != nil {
			t.Fatalf("parent folder %s removed while referenced: %v", id, err)
		}
	}
	if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: mref, Major: true}); err != nil {
		t.Fatal(err)
	}
	srv.collectParents()
	for _, id := range []string{"left", "right"} {
		if _, err := os.Stat(srv.tabletDir("users", id)); !os.IsNotExist(err) {
			t.Fatalf("parent folder %s not removed once unreferenced: %v", id, err)
		}
	}
	check("after the parents' folders went")
}

// The master moves the right tablet elsewhere while the merge is under
// way: the commit must fail, the merged folder go, and the left tablet
// (still assigned here) be served again with every row.
func TestMergeConflictServesTheParentsAgain(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	lref, rref, want := twoTablets(e, c, srv)
	var mergedID string
	srv.testHookMergeWritten = func(m meta.TabletRecord) {
		mergedID = m.ID
		rec := e.tablet("right")
		rec.Server, rec.Epoch = "elsewhere", 6
		if err := e.writeRecord(rec.TabletRecord); err != nil {
			t.Error(err)
		}
	}
	if _, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref}); err == nil {
		t.Fatal("merge of a tablet etcd moved elsewhere succeeded")
	}
	all, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, "users")
	if err != nil || len(all) != 2 || all[0].ID != "left" || all[1].ID != "right" {
		t.Fatalf("etcd after the refused merge: %+v, %v", all, err)
	}
	if _, err := os.Stat(srv.tabletDir("users", mergedID)); !os.IsNotExist(err) {
		t.Fatalf("merged folder left behind: %v", err)
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: lref})
	if err != nil || !slices.Equal(rowKeys(rows), want[:12]) {
		t.Fatalf("left parent after the refused merge reads %q, %v", rowKeys(rows), err)
	}
	wantNotServing(t, "read of the right parent, moved away", func() error {
		_, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: rref})
		return err
	}(), "users", "right")
	// Assigned back here at epoch 7, it holds every row too.
	rref7 := e.load(c, e.assign("right", []byte("m"), nil, srv, 7))
	rows, err = readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: rref7})
	if err != nil || !slices.Equal(rowKeys(rows), want[12:]) {
		t.Fatalf("right parent reloaded reads %q, %v", rowKeys(rows), err)
	}
}

func TestMergeRefusesTabletsThatAreNotAdjacentOrNotHeld(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	lref, rref, _ := twoTablets(e, c, srv)
	_, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: rref, Right: lref})
	testkit.WantCode(t, "merge right before left", err, codes.InvalidArgument, "")
	stale := &tabulapb.TabletRef{Table: "users", TabletId: "right", Epoch: 4}
	_, err = c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: stale})
	wantNotServing(t, "merge at a stale epoch", err, "users", "right")
	// Both still serve.
	for _, ref := range []*tabulapb.TabletRef{lref, rref} {
		if _, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref}); err != nil {
			t.Fatal(err)
		}
	}
}

// Writers write rows on both sides of the boundary while the tablets are
// merged; every acknowledged write is readable exactly once afterwards.
// The merge holds after writing its manifest until a writer was refused,
// so writes certainly overlapped it.
func TestMergeUnderWritesLosesNoAcknowledgedWrite(t *testing.T) {
	const nWriters = 4
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	lref := e.load(c, e.assign("left", nil, []byte("w2"), srv, 1))
	rref := e.load(c, e.assign("right", []byte("w2"), nil, srv, 1))
	var (
		mu       sync.Mutex
		merged   *tabulapb.TabletRef
		acked    = map[string]bool{}
		onMerged [nWriters]int
	)
	route := func(row string) *tabulapb.TabletRef {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case merged != nil:
			return merged
		case row < "w2":
			return lref
		}
		return rref
	}
	refused, broken := make(chan struct{}), make(chan struct{})
	var refusedOnce, brokenOnce sync.Once
	ws := writers.Start(t, nWriters, func(wr *writers.Writer, i int) bool {
		w := wr.N
		row := fmt.Sprintf("w%d-%05d", w, i)
		for attempt := 0; attempt < 400; attempt++ {
			ref := route(row)
			err := put(e.ctx, c, ref, row, set("cf", "q", 1, row))
			if err == nil {
				mu.Lock()
				acked[row] = true
				if ref == merged {
					onMerged[w]++
				}
				mu.Unlock()
				break
			}
			if status.Code(err) != codes.FailedPrecondition {
				t.Errorf("write %s: %v", row, err)
				brokenOnce.Do(func() { close(broken) })
				return false
			}
			refusedOnce.Do(func() { close(refused) })
			time.Sleep(5 * time.Millisecond)
		}
		return true
	})
	eventually(t, 30*time.Second, "writes acknowledged by the parents", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 100
	})
	srv.testHookMergeWritten = func(meta.TabletRecord) {
		select {
		case <-refused:
		case <-broken:
		}
	}
	resp, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
	if err != nil {
		ws.Stop()
		t.Fatal(err)
	}
	mu.Lock()
	merged = &tabulapb.TabletRef{Table: "users", TabletId: resp.Tablet.TabletId, Epoch: resp.Tablet.Epoch}
	mu.Unlock()
	eventually(t, 30*time.Second, "writes acknowledged by the merged tablet", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range onMerged {
			if n < 20 {
				return false
			}
		}
		return true
	})
	ws.Stop()
	if t.Failed() {
		return
	}
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: merged})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[string(r.Key)]++
	}
	for row := range acked {
		if seen[row] != 1 {
			t.Fatalf("acknowledged row %s is readable %d times after the merge", row, seen[row])
		}
	}
	t.Logf("%d acknowledged writes (%v by the merged tablet), %d rows readable", len(acked), onMerged, len(seen))
}

// A merged tablet split again: its children reference the merge parents'
// files through the merged tablet's manifest (two levels). No parent
// folder goes while a child still references it; all go once both
// children have compacted.
func TestMergedTabletSplitsAgainAndItsAncestorsAreCollected(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.DisableBackgroundWork = true })
	c := e.dial(srv)
	lref, rref, want := twoTablets(e, c, srv)
	resp, err := c.MergeTablets(e.ctx, &tabulapb.MergeRequest{Left: lref, Right: rref})
	if err != nil {
		t.Fatal(err)
	}
	mref := &tabulapb.TabletRef{Table: "users", TabletId: resp.Tablet.TabletId, Epoch: resp.Tablet.Epoch}
	split, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: mref, RowKey: []byte("f")})
	if err != nil {
		t.Fatal(err)
	}
	ancestors := []string{"left", "right", resp.Tablet.TabletId}
	exists := func(id string) bool {
		_, err := os.Stat(srv.tabletDir("users", id))
		return err == nil
	}
	var got []string
	for i, ch := range split.Tablets {
		ref := &tabulapb.TabletRef{Table: "users", TabletId: ch.TabletId, Epoch: ch.Epoch}
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rowKeys(rows)...)
		// Compact one child at a time: after the first, the other still
		// references the parents it spans.
		if _, err := c.CompactTablet(e.ctx, &tabulapb.CompactTabletRequest{Tablet: ref, Major: true}); err != nil {
			t.Fatal(err)
		}
		srv.collectParents()
		if i == 0 && (!exists("left") || !exists("right")) {
			t.Fatal("a merge parent's folder went while the right child still references it")
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the merged tablet's children serve %q, want %q", got, want)
	}
	for _, id := range ancestors {
		if exists(id) {
			t.Fatalf("folder of %s still there once nothing references it", id)
		}
	}
}
