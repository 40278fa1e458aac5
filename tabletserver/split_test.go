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
	if _, err := e.cli.Put(e.ctx, e.layout.TabletKey("users", "parent"), meta.EncodeTablet(rec.TabletRecord)); err != nil {
		t.Fatal(err)
	}
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

func TestAutomaticSplitPastTheThreshold(t *testing.T) {
	e := newEnv(t)
	srv := e.start(func(o *Options) { o.SplitCheckInterval = 100 * time.Millisecond })
	c := e.dial(srv)
	ref := e.load(c, e.assign("big", nil, nil, srv, 1))
	value := string(bytes.Repeat([]byte("v"), 1000))
	for i := range 64 {
		if err := put(e.ctx, c, ref, fmt.Sprintf("row%03d", i), set("cf", "q", 1, value)); err != nil {
			t.Fatal(err)
		}
	}
	// The table's own threshold (16 KiB) overrides the server's default.
	sch := &tabulapb.TableSchema{Name: "users", Families: e.schema.Families, SplitThresholdBytes: 16 << 10}
	if _, err := c.UpdateSchema(e.ctx, &tabulapb.UpdateSchemaRequest{Schema: sch}); err != nil {
		t.Fatal(err)
	}
	// Splitting goes on until every tablet is under the threshold and has
	// compacted away its references to its parent's files.
	// It has settled when two polls, more than a split check apart, see
	// the same tablets.
	var stats []*tabulapb.TabletStats
	ids := func(ts []*tabulapb.TabletStats) (out []string) {
		for _, t := range ts {
			out = append(out, t.Tablet.TabletId)
		}
		return out
	}
	eventually(t, 30*time.Second, "automatic splits to settle", func() bool {
		time.Sleep(250 * time.Millisecond)
		resp, err := c.ServerStats(e.ctx, &tabulapb.ServerStatsRequest{})
		if err != nil || len(resp.Tablets) < 2 {
			return false
		}
		prev := stats
		stats = resp.Tablets
		for _, ts := range resp.Tablets {
			if ts.CompactionBacklog > 0 || ts.SizeBytes > 16<<10 {
				return false
			}
		}
		return slices.Equal(ids(prev), ids(stats))
	})
	total := 0
	var prevEnd []byte
	for i, ts := range stats {
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
	eventually(t, 10*time.Second, "the parent folder's deletion", func() bool {
		return !exists(srv.tabletDir("users", "big"))
	})
}

// TestSplitUnderWritesLosesNoAcknowledgedWrite splits a tablet while
// writers hammer it; writers that get NotServing re-locate to the child
// (as the client does). Every acknowledged write is readable afterwards in
// exactly one child.
func TestSplitUnderWritesLosesNoAcknowledgedWrite(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	parent := e.load(c, e.assign("parent", nil, nil, srv, 1))
	var (
		mu       sync.Mutex
		children []*tabulapb.TabletInfo // set once the split answered
		acked    = map[string]bool{}
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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				row := fmt.Sprintf("w%d-%05d", w, i)
				for attempt := 0; attempt < 200; attempt++ {
					err := put(e.ctx, c, route(row), row, set("cf", "q", 1, row))
					if err == nil {
						mu.Lock()
						acked[row] = true
						mu.Unlock()
						break
					}
					if status.Code(err) != codes.FailedPrecondition {
						t.Errorf("write %s: %v", row, err)
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	resp, err := c.SplitTablet(e.ctx, &tabulapb.SplitRequest{Tablet: parent, RowKey: []byte("w2")})
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	mu.Lock()
	children = resp.Tablets
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

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
	t.Logf("%d acknowledged writes, %d rows readable", len(acked), len(seen))
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}
}
