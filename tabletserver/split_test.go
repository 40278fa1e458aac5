package tabletserver

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit/writers"
	"github.com/tabuladb/tabula/meta"
)

func TestSplitViaRPCServesBothHalves(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("parent", []byte("row"), nil, srv, 4))
	const n = 100
	var want []string
	for i := range n {
		row := fmt.Sprintf("row%03d", i)
		want = append(want, row)
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("row050")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Tablets) != 2 {
		t.Fatalf("split answered %d tablets, want 2", len(resp.Tablets))
	}
	left, right := resp.Tablets[0], resp.Tablets[1]
	if !bytes.Equal(left.StartKey, []byte("row")) || !bytes.Equal(left.EndKey, []byte("row050")) ||
		!bytes.Equal(right.StartKey, []byte("row050")) || len(right.EndKey) != 0 {
		t.Fatalf("children [%q,%q) [%q,%q); want [row,row050) [row050,)", left.StartKey, left.EndKey, right.StartKey, right.EndKey)
	}

	// etcd: the parent is gone, the children are assigned here at epoch 5.
	all, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, "users")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("etcd holds %d tablets, want the 2 children", len(all))
	}
	for i, vt := range all {
		if vt.ID != resp.Tablets[i].TabletId || vt.Parent != "parent" || vt.Server != srv.ID() || vt.Epoch != 5 || vt.State != meta.StateAssigned {
			t.Fatalf("child %d in etcd: %+v", i, vt.TabletRecord)
		}
	}

	wantNotServing(t, "write to the split parent", put(e.ctx, c, ref, "row010", set("cf", "q", 2, "x")), "users", "parent")
	var got []string
	for i, child := range resp.Tablets {
		cref := &tabulapb.TabletRef{Table: "users", TabletId: child.TabletId, Epoch: child.Epoch}
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: cref})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if string(r.Cells[0].Value) != string(r.Key) {
				t.Fatalf("row %s holds %q", r.Key, r.Cells[0].Value)
			}
		}
		got = append(got, rowKeys(rows)...)
		if wantN := n / 2; len(rows) != wantN {
			t.Fatalf("child %d serves %d rows, want %d", i, len(rows), wantN)
		}
		// Writes work in the children, only inside their halves.
		mine, theirs := "row010x", "row060x"
		if i == 1 {
			mine, theirs = theirs, mine
		}
		if err := put(e.ctx, c, cref, mine, set("cf", "q", 3, "new")); err != nil {
			t.Fatalf("write to child %d: %v", i, err)
		}
		wantNotServing(t, "write outside the child", put(e.ctx, c, cref, theirs, set("cf", "q", 3, "new")), "users", child.TabletId)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("children together serve %d rows, want exactly the %d written", len(got), len(want))
	}

	// The server picks the split key itself when none is given.
	rref := &tabulapb.TabletRef{Table: "users", TabletId: right.TabletId, Epoch: right.Epoch}
	resp2, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: rref})
	if err != nil {
		t.Fatal(err)
	}
	mid := resp2.Tablets[0].EndKey
	if bytes.Compare(mid, []byte("row050")) <= 0 {
		t.Fatalf("chosen split key %q is not inside the right child", mid)
	}
	if resp2.Tablets[0].Epoch != 6 {
		t.Fatalf("grandchild epoch %d, want 6", resp2.Tablets[0].Epoch)
	}
}

func TestSplitConflictKeepsTheParent(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("parent", nil, nil, srv, 1))
	for _, row := range []string{"a", "m", "z"} {
		if err := put(e.ctx, c, ref, row, set("cf", "q", 1, row)); err != nil {
			t.Fatal(err)
		}
	}
	// The master moves the tablet elsewhere (epoch 2) behind the server's
	// back: the split must not commit, and the server stops serving it.
	e.assign("parent", nil, nil, srv, 1) // same content, new ModRevision
	rec := e.tablet("parent")
	rec.Server, rec.Epoch = "elsewhere", 2
	e.putRecord(rec.TabletRecord)
	_, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: ref, RowKey: []byte("m")})
	if err == nil {
		t.Fatal("split of a tablet etcd assigns elsewhere succeeded")
	}
	all, _, err := meta.GetTablets(e.ctx, e.cli, e.layout, "users")
	if err != nil || len(all) != 1 || all[0].ID != "parent" {
		t.Fatalf("etcd after the refused split: %v, %v", all, err)
	}
	// Assigned back here at epoch 3: it loads and holds every row.
	ref3 := e.load(c, e.assign("parent", nil, nil, srv, 3))
	rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ref3})
	if err != nil || !slices.Equal(rowKeys(rows), []string{"a", "m", "z"}) {
		t.Fatalf("parent after refused split reads %q, %v", rowKeys(rows), err)
	}
}

// bigTablet loads tablet "big" with 64 rows of 1 KB and lowers the table's
// split threshold to 16 KiB (the table's own threshold overrides the
// server's default), so the split check splits it.
func bigTablet(e *env, c tabulapb.TabletServerClient, srv *Server) {
	e.t.Helper()
	ref := e.load(c, e.assign("big", nil, nil, srv, 1))
	value := string(bytes.Repeat([]byte("v"), 1000))
	for i := range 64 {
		if err := put(e.ctx, c, ref, fmt.Sprintf("row%03d", i), set("cf", "q", 1, value)); err != nil {
			e.t.Fatal(err)
		}
	}
	sch := &tabulapb.TableSchema{Name: "users", Families: e.schema.Families, SplitThresholdBytes: 16 << 10}
	e.putSchema(sch) // the master writes etcd first, then tells the servers
	if _, err := c.UpdateSchema(e.ctx, &tabulapb.UpdateSchemaRequest{Schema: sch}); err != nil {
		e.t.Fatal(err)
	}
}

// TestAutomaticSplitPastTheThreshold drives the split check round by
// round (the background loop is off): each round splits every tablet past
// the threshold that has compacted away its references to its parent's
// files; once a round finds nothing to split, every tablet is under the
// threshold, the tablets tile the table and hold every row, and the split
// parents' folders are gone.
func TestAutomaticSplitPastTheThreshold(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil) // SplitCheckInterval -1: the test runs the checks
	c := e.dial(srv)
	bigTablet(e, c, srv)
	noBacklog := func() bool {
		for _, h := range srv.heldTablets("") {
			if h.t.Stats().CompactionBacklog > 0 {
				return false
			}
		}
		return true
	}
	rounds := 0
	for {
		// The check skips tablets that still reference their parent's
		// files: let the children's compactions rewrite them first.
		eventually(t, 30*time.Second, "compactions to rewrite split references", noBacklog)
		n := srv.checkSplits(e.ctx)
		t.Logf("round %d: %d splits", rounds, n)
		if n == 0 {
			break
		}
		if rounds++; rounds > 16 {
			t.Fatalf("still splitting after %d rounds", rounds)
		}
	}
	if rounds == 0 {
		t.Fatal("the first check split nothing")
	}
	resp, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stats := resp.Tablets
	if len(stats) < 2 {
		t.Fatalf("%d tablets after splitting, want at least 2", len(stats))
	}
	total := 0
	var prevEnd []byte
	for i, ts := range stats {
		if ts.CompactionBacklog > 0 || ts.SizeBytes > 16<<10 {
			t.Errorf("tablet %s: %d bytes, backlog %d after a check that split nothing; want at most 16 KiB and no backlog", ts.Tablet.TabletId, ts.SizeBytes, ts.CompactionBacklog)
		}
		if i > 0 && !bytes.Equal(ts.StartKey, prevEnd) {
			t.Fatalf("tablet %d starts at %q, the previous one ends at %q", i, ts.StartKey, prevEnd)
		}
		prevEnd = ts.EndKey
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: ts.Tablet})
		if err != nil {
			t.Fatalf("reading tablet %s: %v", ts.Tablet.TabletId, err)
		}
		total += len(rows)
	}
	if total != 64 || len(stats[0].StartKey) != 0 || len(prevEnd) != 0 {
		t.Fatalf("%d tablets hold %d rows, want 64 rows covering the whole table", len(stats), total)
	}
	// The last round ran after every reference was rewritten: it deleted
	// the folders of all split parents.
	if exists(srv.tabletDir("users", "big")) {
		t.Fatal("the split parent's folder is still there after a check with no references left")
	}
	srv.mu.RLock()
	left := len(srv.parents)
	srv.mu.RUnlock()
	if left != 0 {
		t.Fatalf("%d split parents' folders wait for deletion, want none", left)
	}
}

// TestSplitLoopRunsTheCheck: with SplitCheckInterval set, the server runs
// the split check on its own.
func TestSplitLoopRunsTheCheck(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.SplitCheckInterval = 10 * time.Millisecond })
	c := e.dial(srv)
	bigTablet(e, c, srv)
	eventually(t, 30*time.Second, "the background loop to split the tablet", func() bool {
		return len(srv.heldTablets("users")) >= 2
	})
}

// TestSplitUnderWritesLosesNoAcknowledgedWrite splits a tablet while
// writers hammer it; writers that get NotServing re-locate to the child
// (as the client does). Every acknowledged write is readable afterwards in
// exactly one child. The split starts once every writer has had writes
// acknowledged by the parent, holds still after its commit until a write
// was refused because of it, and the writers stop once each has had
// writes acknowledged by a child.
func TestSplitUnderWritesLosesNoAcknowledgedWrite(t *testing.T) {
	const nWriters, perPhase = 4, 20
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	parent := e.load(c, e.assign("parent", nil, nil, srv, 1))
	var (
		mu       sync.Mutex
		children []*tabulapb.TabletInfo // set once the split answered
		acked    = map[string]bool{}
		// acknowledged writes per writer, by the parent and by a child
		onParent, onChild [nWriters]int
	)
	route := func(row string) *tabulapb.TabletRef {
		mu.Lock()
		defer mu.Unlock()
		for _, ch := range children {
			if row >= string(ch.StartKey) && (len(ch.EndKey) == 0 || row < string(ch.EndKey)) {
				return &tabulapb.TabletRef{Table: "users", TabletId: ch.TabletId, Epoch: ch.Epoch}
			}
		}
		return parent
	}
	refused := make(chan struct{}) // closed at the first NotServing
	broken := make(chan struct{})  // closed when a writer fails
	var refusedOnce, brokenOnce sync.Once
	// progress reports whether every writer has perPhase acknowledged
	// writes in counts, or a writer failed (it reported why).
	progress := func(counts *[nWriters]int) func() bool {
		return func() bool {
			select {
			case <-broken:
				return true
			default:
			}
			mu.Lock()
			defer mu.Unlock()
			for _, n := range counts {
				if n < perPhase {
					return false
				}
			}
			return true
		}
	}
	ws := writers.Start(t, nWriters, func(wr *writers.Writer, i int) bool {
		w := wr.N
		row := fmt.Sprintf("w%d-%05d", w, i)
		for attempt := 0; attempt < 200; attempt++ {
			ref := route(row)
			err := put(e.ctx, c, ref, row, set("cf", "q", 1, row))
			if err == nil {
				mu.Lock()
				acked[row] = true
				if ref == parent {
					onParent[w]++
				} else {
					onChild[w]++
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
	eventually(t, 30*time.Second, "writes acknowledged by the parent", progress(&onParent))
	if t.Failed() {
		return
	}
	// The parent refuses writes from the start of the split until its
	// children serve: hold the split after its commit until a writer has
	// met a refusal, so writes certainly overlapped it.
	srv.testHookSplitCommitted = func(_, _ meta.TabletRecord) {
		select {
		case <-refused:
		case <-broken:
		}
	}
	resp, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: parent, RowKey: []byte("w2")})
	if err != nil {
		ws.Stop()
		t.Fatal(err)
	}
	mu.Lock()
	children = resp.Tablets
	mu.Unlock()
	eventually(t, 30*time.Second, "writes acknowledged by the children", progress(&onChild))
	ws.Stop()
	if t.Failed() {
		return
	}

	seen := map[string]int{}
	for _, ch := range resp.Tablets {
		rows, err := readAll(e.ctx, c, &tabulapb.ReadRowsRequest{Tablet: &tabulapb.TabletRef{Table: "users", TabletId: ch.TabletId, Epoch: ch.Epoch}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen[string(r.Key)]++
		}
	}
	for row := range acked {
		if seen[row] != 1 {
			t.Fatalf("acknowledged row %s is readable %d times after the split", row, seen[row])
		}
	}
	t.Logf("%d acknowledged writes (%v by the parent, %v by the children), %d rows readable", len(acked), onParent, onChild, len(seen))
}
